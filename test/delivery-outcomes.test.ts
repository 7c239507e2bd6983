/**
 * What a delivery is and how each answer ends it: the signed JSON POST carrying the
 * payload byte for byte; retries to success, dead letters on 400, 401 (credentials), 410
 * (the endpoint disabled) and a 302 (not followed), attempts running out, Retry-After on
 * 429; and a message scheduled with deliverAt.
 *
 * End to end: the in-process API and one worker on a test database, sending real HTTP
 * requests to real receivers on 127.0.0.1. Each test uses its own app and endpoints (own
 * receiver paths), so the tests share the worker but not their data.
 *
 * No test sleeps: the worker's statements read a test clock (helpers/test-clock.ts), which
 * a test moves past a wait (a retry delay, a Retry-After pause, a scheduled time), then
 * waits for a claim made after that (a sentinel message delivered) before checking that
 * nothing more was sent.
 */
import { randomUUID } from "node:crypto";
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import {
  deliveryCalls,
  type Script,
  type ScriptedReceiver,
  startScriptedReceiver,
} from "./helpers/deliveries.ts";
import { type Harness, startHarness } from "./helpers/harness.ts";
import { waitFor } from "./helpers/receiver.ts";
import { makeTestClock } from "./helpers/test-clock.ts";

let h: Harness;
/** The main receiver: replies are scripted per path (default 200). */
let rx: ScriptedReceiver;
/** the worker's SQL clock */
const clock = makeTestClock();

beforeAll(async () => {
  h = await startHarness();
  rx = await startScriptedReceiver();
  // the harness's worker, on the test clock
  h.startWorker({}, { clock: clock.sql });
});

afterAll(async () => {
  await h?.close();
  await rx?.close();
});

const { newApp, newEndpoint, send, deliveryRow, waitForStatus, attemptRows } = deliveryCalls(
  () => h,
);
/** A fresh receiver path with an optional reply script. */
const route = (script?: Script) => rx.route(script);

/**
 * Resolves once the worker has claimed at a time `ms` past the clock's present: a message
 * to an endpoint of its own, sent after the clock moved, delivered. Anything due by then
 * that the worker would send was in that claim or an earlier one.
 */
async function claimedAfter(ms: number): Promise<void> {
  clock.advance(ms);
  const appId = await newApp();
  const path = route();
  const endpointId = await newEndpoint(appId, `${rx.url}${path}`);
  await waitForStatus(await send(appId), endpointId, "delivered");
}

/** The longest retry delay of the harness (testConfig's retryCapMs), with room to spare. */
const PAST_ANY_RETRY_MS = 1_000;

// ---------------------------------------------------------------- the request itself

describe("the request", () => {
  test("is a signed JSON POST carrying the payload byte for byte", async () => {
    const appId = await newApp();
    const path = route();
    const endpointId = await newEndpoint(appId, `${rx.url}${path}`);

    // Key order that is not alphabetical, an integer-like key (JSON.parse would move it
    // first), a big integer beyond 2^53, a trailing-zero decimal, escapes and whitespace:
    // any re-serialization would change these bytes.
    const payloadText =
      '{"zeta":1, "2":"two","alpha":{"b":2,"a":1},"big":12345678901234567890,' +
      '"price":1.50,"esc":"\\u00e9\\n","uni":"grüße","list":[3, 2 ,1]}';
    const raw = `{"eventType":"test.event","payload":${payloadText},"eventId":"evt-${randomUUID()}"}`;
    const res = await h.call("POST", `/api/v1/app/${appId}/msg`, raw);
    expect(res.status).toBe(202);
    const msgId: string = res.body.id;

    await waitFor(() => rx.on(path).length === 1, 10_000, "the delivery to arrive");
    const req = rx.on(path)[0]!;
    expect(req.method).toBe("POST");
    expect(req.headers["content-type"]).toMatch(/^application\/json/);
    expect(req.headers["user-agent"]).toMatch(/hookrelay/i);
    expect(req.headers["webhook-id"]).toBe(msgId);
    expect(req.body).toBe(payloadText);

    const webhookTs = Number(req.headers["webhook-timestamp"]);
    expect(Math.abs(webhookTs - req.at / 1000)).toBeLessThan(10);

    const secret = await h.call("GET", `/api/v1/app/${appId}/endpoint/${endpointId}/secret`);
    expect(secret.status).toBe(200);
    expect(secret.body.key).toMatch(/^whsec_/);
    const headers = {
      "webhook-id": String(req.headers["webhook-id"]),
      "webhook-timestamp": String(req.headers["webhook-timestamp"]),
      "webhook-signature": String(req.headers["webhook-signature"]),
    };
    expect(() => new Webhook(secret.body.key).verify(req.body, headers)).not.toThrow();
    // The check can fail: another secret, or one changed byte, does not verify.
    const other = `whsec_${Buffer.alloc(32, 7).toString("base64")}`;
    expect(() => new Webhook(other).verify(req.body, headers)).toThrow();
    expect(() =>
      new Webhook(secret.body.key).verify(req.body.replace("1.50", "1.5"), headers),
    ).toThrow();

    await waitForStatus(msgId, endpointId, "delivered");
  });
});

// ---------------------------------------------------------------- outcomes

describe("outcomes", () => {
  test("500, 500, 200: delivered on the third attempt with three attempt rows in order", async () => {
    const appId = await newApp();
    const path = route((_req, n) => ({ status: n < 2 ? 500 : 200, body: n < 2 ? "boom" : "fine" }));
    const endpointId = await newEndpoint(appId, `${rx.url}${path}`);
    const msgId = await send(appId);

    const row = await waitForStatus(msgId, endpointId, "delivered");
    expect(row.attempt_count).toBe(3);
    expect(rx.on(path)).toHaveLength(3);
    expect(new Set(rx.on(path).map((r) => r.headers["webhook-id"]))).toEqual(new Set([msgId]));

    const rows = await attemptRows(msgId);
    expect(rows.map((r) => r.attempt_number)).toEqual([1, 2, 3]);
    expect(rows.map((r) => r.status_code)).toEqual([500, 500, 200]);
    expect(rows.map((r) => r.outcome)).toEqual(["failure", "failure", "success"]);

    const api = await h.call("GET", `/api/v1/app/${appId}/attempt/msg/${msgId}`);
    expect(api.status).toBe(200);
    expect(api.body.data).toHaveLength(3);
    const byNumber = [...api.body.data].sort(
      (a: { attemptNumber: number }, b: { attemptNumber: number }) =>
        a.attemptNumber - b.attemptNumber,
    );
    expect(byNumber.map((a: { responseStatusCode: number }) => a.responseStatusCode)).toEqual([
      500, 500, 200,
    ]);
    // Svix's MessageStatus: 0 = success, 2 = fail.
    expect(byNumber.map((a: { status: number }) => a.status)).toEqual([2, 2, 0]);
    expect(byNumber.map((a: { response: string }) => a.response)).toEqual(["boom", "boom", "fine"]);
    expect(
      byNumber.every(
        (a: { msgId: string; endpointId: string }) =>
          a.msgId === msgId && a.endpointId === endpointId,
      ),
    ).toBe(true);
  });

  test("400: dead letter after exactly one attempt", async () => {
    const appId = await newApp();
    const path = route(() => ({ status: 400, body: "bad request" }));
    const endpointId = await newEndpoint(appId, `${rx.url}${path}`);
    const msgId = await send(appId);

    const row = await waitForStatus(msgId, endpointId, "dead_letter");
    expect(row.attempt_count).toBe(1);
    expect(row.last_status_code).toBe(400);
    await claimedAfter(PAST_ANY_RETRY_MS); // a retry, if one were scheduled, is due by then
    expect(rx.on(path)).toHaveLength(1);
    expect(await attemptRows(msgId)).toHaveLength(1);
  });

  test("401: dead letter reported as a credentials problem", async () => {
    const appId = await newApp();
    const path = route(() => ({ status: 401 }));
    const endpointId = await newEndpoint(appId, `${rx.url}${path}`);
    const msgId = await send(appId);

    const row = await waitForStatus(msgId, endpointId, "dead_letter");
    expect(row.attempt_count).toBe(1);
    expect(row.last_error_kind).toBe("credentials");
    expect(rx.on(path)).toHaveLength(1);
  });

  test("410: the endpoint is disabled and later messages are held for it, not sent", async () => {
    const appId = await newApp();
    const gonePath = route(() => ({ status: 410 }));
    const okPath = route();
    const goneId = await newEndpoint(appId, `${rx.url}${gonePath}`);
    const okId = await newEndpoint(appId, `${rx.url}${okPath}`);
    const first = await send(appId);

    const row = await waitForStatus(first, goneId, "dead_letter");
    expect(row.last_error_kind).toBe("gone");
    await waitFor(
      async () => {
        const { rows } = await h.db.pool.query("select disabled from endpoints where id = $1", [
          goneId,
        ]);
        return rows[0]?.disabled === true;
      },
      10_000,
      "the endpoint to be disabled",
    );
    const { rows } = await h.db.pool.query(
      "select disabled, disabled_reason from endpoints where id = $1",
      [goneId],
    );
    expect(rows[0]).toEqual({ disabled: true, disabled_reason: "gone" });
    const ep = await h.call("GET", `/api/v1/app/${appId}/endpoint/${goneId}`);
    expect(ep.status).toBe(200);
    expect(ep.body.disabled).toBe(true);

    const second = await send(appId);
    // held while disabled (docs/delivery.md, "While an endpoint is disabled")
    expect((await deliveryRow(second, goneId))?.status).toBe("pending");
    expect(await deliveryRow(second, okId)).toBeDefined();
    await waitForStatus(second, okId, "delivered");
    expect(rx.on(gonePath)).toHaveLength(1);
    expect(rx.on(okPath)).toHaveLength(2);
  });

  test("302: the redirect is not followed and the delivery is dead-lettered", async () => {
    const appId = await newApp();
    const target = route();
    const path = route(() => ({ status: 302, headers: { location: `${rx.url}${target}` } }));
    const endpointId = await newEndpoint(appId, `${rx.url}${path}`);
    const msgId = await send(appId);

    const row = await waitForStatus(msgId, endpointId, "dead_letter");
    expect(row.attempt_count).toBe(1);
    expect(row.last_error_kind).toBe("redirect");
    const rows = await attemptRows(msgId);
    expect(rows).toHaveLength(1);
    expect(rows[0]!.status_code).toBe(302);
    expect(rows[0]!.error_kind).toBe("redirect");
    await claimedAfter(PAST_ANY_RETRY_MS);
    expect(rx.on(path)).toHaveLength(1);
    expect(rx.on(target)).toHaveLength(0);
  });

  test("attempts run out: maxAttempts 3 against an always-500 endpoint", async () => {
    const appId = await newApp();
    const path = route(() => ({ status: 500 }));
    const endpointId = await newEndpoint(appId, `${rx.url}${path}`, { maxAttempts: 3 });
    const msgId = await send(appId);

    const row = await waitForStatus(msgId, endpointId, "dead_letter");
    expect(row.attempt_count).toBe(3);
    expect(row.last_status_code).toBe(500);
    expect((await attemptRows(msgId)).map((r) => r.attempt_number)).toEqual([1, 2, 3]);
    await claimedAfter(PAST_ANY_RETRY_MS);
    expect(rx.on(path)).toHaveLength(3);
  });

  test("429 with Retry-After: 3600 waits that hour before the next attempt", async () => {
    const appId = await newApp();
    const path = route((_req, n) =>
      n === 0 ? { status: 429, headers: { "retry-after": "3600" } } : { status: 200 },
    );
    // The cap bounds Retry-After too, so it must be above an hour here; without the
    // header the jittered delay would be at most min(7200000, 50 * 2) = 100 ms.
    const endpointId = await newEndpoint(appId, `${rx.url}${path}`, {
      retryBaseMs: 50,
      retryCapMs: 7_200_000,
    });
    const msgId = await send(appId);

    await waitForStatus(msgId, endpointId, "failed");
    // As stored by the result write, against its own clock (updated_at): the retry and the
    // endpoint's pause both an hour later.
    const { rows } = await h.db.pool.query(
      `select (extract(epoch from d.next_attempt_at - d.updated_at) * 1000)::int as due_in_ms,
              (extract(epoch from h.paused_until - d.updated_at) * 1000)::int as paused_for_ms
       from deliveries d join endpoint_health h on h.endpoint_id = d.endpoint_id
       where d.message_id = $1 and d.endpoint_id = $2`,
      [msgId, endpointId],
    );
    expect(rows[0]).toEqual({ due_in_ms: 3_600_000, paused_for_ms: 3_600_000 });
    // 50 minutes on (the 10 left are room for a slow machine), a claim still leaves it
    await claimedAfter(3_000_000);
    expect(rx.on(path)).toHaveLength(1);

    clock.advance(600_000);
    const row = await waitForStatus(msgId, endpointId, "delivered");
    expect(row.attempt_count).toBe(2);
    expect(rx.on(path)).toHaveLength(2);
  });
});

// ---------------------------------------------------------------- scheduling

describe("scheduling", () => {
  test("deliverAt an hour ahead: not delivered before that time, delivered after", async () => {
    const appId = await newApp();
    const path = route();
    const endpointId = await newEndpoint(appId, `${rx.url}${path}`);
    const deliverAt = new Date(clock.sql()!.getTime() + 3_600_000);
    const msgId = await send(appId, { scheduled: true }, { deliverAt: deliverAt.toISOString() });

    expect((await deliveryRow(msgId, endpointId))?.status).toBe("pending");
    // 50 minutes on (the 10 left are room for a slow machine), a claim still leaves it
    await claimedAfter(3_000_000);
    expect(rx.on(path)).toHaveLength(0);
    expect((await deliveryRow(msgId, endpointId))?.status).toBe("pending");

    clock.advance(600_000);
    await waitForStatus(msgId, endpointId, "delivered");
    expect(rx.on(path)).toHaveLength(1);
    // delivered_at is the result write's clock, which is after the claim's
    const { rows } = await h.db.pool.query(
      "select delivered_at from deliveries where message_id = $1 and endpoint_id = $2",
      [msgId, endpointId],
    );
    expect(rows[0].delivered_at.getTime()).toBeGreaterThanOrEqual(deliverAt.getTime());
  });
});
