/**
 * Delivery behaviour end to end: the in-process API and one worker on a test database,
 * sending real HTTP requests to real receivers on 127.0.0.1. Each test uses its own app
 * and endpoints (own receiver paths), so the tests share the worker but not their data.
 */
import { randomUUID } from "node:crypto";
import http from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { withTransaction } from "../src/db/pool.ts";
import {
  type ClaimedDelivery,
  type ClaimOptions,
  claimDeliveries,
} from "../src/queue/claim-deliveries.ts";
import { enqueueMessage } from "../src/queue/enqueue-message.ts";
import { type DeliveryResult, recordResults } from "../src/queue/record-results.ts";
import { releaseExpiredClaims } from "../src/queue/release-deliveries.ts";
import { type Harness, startHarness } from "./helpers/harness.ts";
import {
  type Received,
  type Receiver,
  type Reply,
  startReceiver,
  waitFor,
} from "./helpers/receiver.ts";

type Script = (req: Received, n: number) => Reply | Promise<Reply>;

interface DeliveryRow {
  id: number;
  status: string;
  attempt_count: number;
  last_error_kind: string | null;
  last_status_code: number | null;
}

interface AttemptRow {
  attempt_number: number;
  status_code: number | null;
  outcome: string;
  error_kind: string | null;
  latency_ms: number;
  response_body: string | null;
  body_bytes: number | null;
  created_at: Date;
}

let h: Harness;
/** The main receiver: replies are scripted per path (default 200). */
let rx: Receiver;
const scripts = new Map<string, Script>();

beforeAll(async () => {
  h = await startHarness();
  rx = await startReceiver((req) => {
    const script = scripts.get(req.path);
    // The request is already recorded, so its index on its path is the count minus one.
    return script ? script(req, rx.on(req.path).length - 1) : { status: 200 };
  });
  h.startWorker();
});

afterAll(async () => {
  await h?.close();
  await rx?.close();
});

// ---------------------------------------------------------------- helpers

let pathCounter = 0;
/** A fresh receiver path with an optional reply script. */
function route(script?: Script): string {
  const path = `/hook-${++pathCounter}`;
  if (script) scripts.set(path, script);
  return path;
}

async function newApp(): Promise<string> {
  const res = await h.call("POST", "/api/v1/app", { name: `app-${randomUUID()}` });
  expect(res.status).toBe(201);
  return res.body.id;
}

async function newEndpoint(
  appId: string,
  url: string,
  policy: Record<string, unknown> = {},
): Promise<string> {
  const res = await h.call("POST", `/api/v1/app/${appId}/endpoint`, { url, ...policy });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.id;
}

async function send(
  appId: string,
  payload: unknown = { hello: "world" },
  extra: Record<string, unknown> = {},
): Promise<string> {
  const res = await h.call("POST", `/api/v1/app/${appId}/msg`, {
    eventType: "test.event",
    payload,
    ...extra,
  });
  expect(res.status, JSON.stringify(res.body)).toBe(202);
  return res.body.id;
}

async function deliveryRow(msgId: string, endpointId: string): Promise<DeliveryRow | undefined> {
  const { rows } = await h.db.pool.query(
    `select id, status, attempt_count, last_error_kind, last_status_code
     from deliveries where message_id = $1 and endpoint_id = $2`,
    [msgId, endpointId],
  );
  return rows[0];
}

async function waitForStatus(
  msgId: string,
  endpointId: string,
  status: string,
  timeoutMs = 15_000,
): Promise<DeliveryRow> {
  let last: DeliveryRow | undefined;
  try {
    await waitFor(async () => {
      last = await deliveryRow(msgId, endpointId);
      return last?.status === status;
    }, timeoutMs);
  } catch {
    throw new Error(
      `delivery of ${msgId} never became ${status}; last state: ${JSON.stringify(last)}`,
    );
  }
  return last!;
}

async function attemptRows(msgId: string, endpointId?: string): Promise<AttemptRow[]> {
  const { rows } = await h.db.pool.query(
    `select attempt_number, status_code, outcome, error_kind, latency_ms, response_body,
            octet_length(response_body) as body_bytes, created_at
     from attempts where message_id = $1 and ($2::text is null or endpoint_id = $2)
     order by id`,
    [msgId, endpointId ?? null],
  );
  return rows;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A bare HTTP server for replies the scripted receiver cannot make (dripping, endless bodies). */
async function startRawServer(onRequest: (res: http.ServerResponse) => void) {
  const sockets = new Set<Socket>();
  const server = http.createServer((req, res) => {
    req.resume();
    req.on("end", () => onRequest(res));
  });
  server.on("connection", (s) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

/** A successful attempt's result for a claimed row, as a worker holding `token` reports it. */
function resultFor(
  claim: ClaimedDelivery,
  token: string,
  over: Partial<DeliveryResult> = {},
): DeliveryResult {
  return {
    deliveryId: claim.id,
    claimToken: token,
    messageId: claim.messageId,
    endpointId: claim.endpointId,
    appId: claim.appId,
    trigger: claim.trigger,
    url: claim.url,
    attemptNumber: claim.attemptCount + 1,
    nextStatus: "delivered",
    retryDelayMs: 0,
    startedAt: new Date(),
    latencyMs: 5,
    success: true,
    statusCode: 200,
    errorKind: null,
    error: null,
    responseBody: null,
    isProbe: claim.isProbe,
    pauseMs: null,
    ...over,
  };
}

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
    await sleep(300); // a retry, if one were scheduled, would come within this (delays are <= 200 ms)
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

  test("410: the endpoint is disabled and later messages are not fanned out to it", async () => {
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
    expect(await deliveryRow(second, goneId)).toBeUndefined();
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
    await sleep(200);
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
    await sleep(300);
    expect(rx.on(path)).toHaveLength(3);
  });

  test("429 with Retry-After: 1 waits about a second before the next attempt", async () => {
    const appId = await newApp();
    const path = route((_req, n) =>
      n === 0 ? { status: 429, headers: { "retry-after": "1" } } : { status: 200 },
    );
    // The cap bounds Retry-After too, so it must be above one second here; without the
    // header the jittered delay would be at most min(5000, 50 * 2) = 100 ms.
    const endpointId = await newEndpoint(appId, `${rx.url}${path}`, {
      retryBaseMs: 50,
      retryCapMs: 5_000,
    });
    const msgId = await send(appId);

    const row = await waitForStatus(msgId, endpointId, "delivered");
    expect(row.attempt_count).toBe(2);
    const [first, second] = rx.on(path);
    expect(second!.at - first!.at).toBeGreaterThanOrEqual(900);
  });
});

// ---------------------------------------------------------------- timeouts and limits

describe("timeouts and response limits", () => {
  test("a hanging endpoint times out at its deadline and does not hold back a healthy one", async () => {
    const hangRx = await startReceiver(() => ({ hang: true }));
    try {
      const appId = await newApp();
      const okPath = route();
      const hangId = await newEndpoint(appId, `${hangRx.url}/hang`, {
        timeoutMs: 1_000,
        maxAttempts: 1,
      });
      const okId = await newEndpoint(appId, `${rx.url}${okPath}`);

      // All messages commit together, so the worker claims both endpoints' rows in one batch.
      const n = 8;
      const ids = await withTransaction(h.db.pool, async (client) => {
        const out: string[] = [];
        for (let i = 0; i < n; i++) {
          const r = await enqueueMessage(
            client,
            { appId, eventType: "test.event", payload: `{"i":${i}}` },
            5,
          );
          expect(r.deliveries).toBe(2);
          out.push(r.messageId);
        }
        return out;
      });

      await waitFor(() => rx.on(okPath).length === n, 10_000, "every healthy delivery");
      // At this moment not one hanging attempt may have finished (timed out) yet.
      const early = await h.db.pool.query(
        "select count(*)::int as n from attempts where endpoint_id = $1",
        [hangId],
      );
      expect(early.rows[0].n).toBe(0);

      await waitFor(
        async () => {
          const { rows } = await h.db.pool.query(
            "select count(*)::int as n from deliveries where endpoint_id = $1 and status = 'dead_letter'",
            [hangId],
          );
          return rows[0].n === n;
        },
        15_000,
        "every hanging delivery to time out",
      );

      const { rows: timeouts } = await h.db.pool.query(
        "select error_kind, latency_ms, status_code, created_at from attempts where endpoint_id = $1",
        [hangId],
      );
      expect(timeouts).toHaveLength(n);
      for (const t of timeouts) {
        expect(t.error_kind).toBe("timeout");
        expect(t.status_code).toBeNull();
        expect(t.latency_ms).toBeGreaterThanOrEqual(900);
        expect(t.latency_ms).toBeLessThanOrEqual(3_000);
      }
      // Timestamps: every healthy arrival precedes the first timeout row.
      const lastHealthy = Math.max(...rx.on(okPath).map((r) => r.at));
      const firstTimeout = Math.min(...timeouts.map((t) => (t.created_at as Date).getTime()));
      expect(lastHealthy).toBeLessThan(firstTimeout);
      expect(new Set(hangRx.requests.map((r) => r.headers["webhook-id"]))).toEqual(new Set(ids));
      // The hanging requests ran side by side: the last was sent before the first could
      // time out (one after another, they would be spread over n seconds).
      const hangArrivals = hangRx.requests.map((r) => r.at);
      expect(Math.max(...hangArrivals) - Math.min(...hangArrivals)).toBeLessThan(1_000);
      for (const id of ids) expect((await deliveryRow(id, okId))?.status).toBe("delivered");
    } finally {
      await hangRx.close();
    }
  });

  test("a body that drips one byte every 200 ms is cut off by the absolute deadline", async () => {
    const arrivals: number[] = [];
    const closedAt: number[] = [];
    const server = await startRawServer((res) => {
      arrivals.push(Date.now());
      res.writeHead(200, { "content-type": "text/plain" });
      res.flushHeaders();
      let sent = 0;
      const timer = setInterval(() => {
        if (++sent > 50) {
          clearInterval(timer);
          res.end();
        } else {
          res.write("x");
        }
      }, 200);
      res.on("close", () => {
        clearInterval(timer);
        closedAt.push(Date.now());
      });
    });
    try {
      const appId = await newApp();
      const endpointId = await newEndpoint(appId, `${server.url}/drip`, {
        timeoutMs: 1_000,
        maxAttempts: 1,
      });
      const msgId = await send(appId);

      await waitFor(
        () => arrivals.length === 1,
        10_000,
        "the request to reach the dripping server",
      );
      const arrived = arrivals[0]!;
      // Recorded within ~3 s of the request, not after the 10 s the body would take.
      await waitFor(
        async () => (await attemptRows(msgId)).length === 1,
        3_000,
        "the timeout to be recorded",
      );
      const [attempt] = await attemptRows(msgId);
      expect(attempt!.error_kind).toBe("timeout");
      expect(attempt!.latency_ms).toBeGreaterThanOrEqual(900);
      expect(attempt!.latency_ms).toBeLessThanOrEqual(3_000);
      expect(closedAt.length).toBe(1);
      expect(closedAt[0]! - arrived).toBeLessThan(3_000);
      const row = await waitForStatus(msgId, endpointId, "dead_letter", 3_000);
      expect(row.last_error_kind).toBe("timeout");
    } finally {
      await server.close();
    }
  });

  test("reading stops at 64 KiB: a 200 whose body never ends is delivered at once", async () => {
    let closed = false;
    const server = await startRawServer((res) => {
      res.writeHead(200, { "content-type": "text/plain" });
      // 96 KiB, then the body stays open: only a reader that stops at 64 KiB finishes early.
      res.write("y".repeat(96 * 1024));
      res.on("close", () => {
        closed = true;
      });
    });
    try {
      const appId = await newApp();
      const endpointId = await newEndpoint(appId, `${server.url}/endless`, {
        timeoutMs: 5_000,
        maxAttempts: 1,
      });
      const msgId = await send(appId);

      await waitForStatus(msgId, endpointId, "delivered", 4_000);
      const [attempt] = await attemptRows(msgId);
      expect(attempt!.outcome).toBe("success");
      expect(attempt!.status_code).toBe(200);
      expect(attempt!.latency_ms).toBeLessThan(4_000);
      expect(attempt!.response_body).toBe("y".repeat(1_024));
      // The rest of the response was not waited for: the connection was dropped.
      await waitFor(() => closed, 2_000, "the connection to be dropped");
    } finally {
      await server.close();
    }
  });

  test("a connection dropped halfway through the body fails the attempt at once, not at its deadline", async () => {
    const server = await startRawServer((res) => {
      res.writeHead(200, { "content-type": "text/plain", "content-length": "1000" });
      res.write("z".repeat(100));
      setTimeout(() => res.socket?.destroy(), 50);
    });
    try {
      const appId = await newApp();
      const endpointId = await newEndpoint(appId, `${server.url}/cut`, {
        timeoutMs: 8_000,
        maxAttempts: 1,
      });
      const msgId = await send(appId);

      const row = await waitForStatus(msgId, endpointId, "dead_letter", 6_000);
      expect(row.last_error_kind).toBe("connection");
      const [attempt] = await attemptRows(msgId);
      expect(attempt!.outcome).toBe("failure");
      expect(attempt!.latency_ms).toBeLessThan(6_000);
    } finally {
      await server.close();
    }
  });

  test("a response body over 64 KiB is cut and at most 1 KiB is stored", async () => {
    const appId = await newApp();
    // 3-byte characters: 1024 is not a multiple of 3, so the cut must respect UTF-8.
    const big = "€".repeat(40_000); // 120 000 bytes
    const path = route(() => ({ status: 200, body: big }));
    const endpointId = await newEndpoint(appId, `${rx.url}${path}`);
    const msgId = await send(appId);

    await waitForStatus(msgId, endpointId, "delivered");
    const [attempt] = await attemptRows(msgId);
    expect(attempt!.outcome).toBe("success");
    expect(attempt!.body_bytes).toBeGreaterThan(0);
    expect(attempt!.body_bytes).toBeLessThanOrEqual(1_024);
    expect(attempt!.response_body).not.toContain("\uFFFD");
    expect(big.startsWith(attempt!.response_body!)).toBe(true);
  });
});

// ---------------------------------------------------------------- scheduling

describe("scheduling", () => {
  test("deliverAt 1.5 s ahead: not delivered before that time, delivered after", async () => {
    const appId = await newApp();
    const path = route();
    const endpointId = await newEndpoint(appId, `${rx.url}${path}`);
    const deliverAt = new Date(Date.now() + 1_500);
    const msgId = await send(appId, { scheduled: true }, { deliverAt: deliverAt.toISOString() });

    expect((await deliveryRow(msgId, endpointId))?.status).toBe("pending");
    await sleep(1_000);
    expect(rx.on(path)).toHaveLength(0);
    await waitForStatus(msgId, endpointId, "delivered", 10_000);
    expect(rx.on(path)).toHaveLength(1);
    // Same host clock for PostgreSQL and the receiver; a few ms of slack for rounding.
    expect(rx.on(path)[0]!.at).toBeGreaterThanOrEqual(deliverAt.getTime() - 20);
  });
});

// ---------------------------------------------------------------- stale results

describe("claim tokens", () => {
  test("a result carrying a stale claim token changes nothing; the current one applies", async () => {
    // Its own database and no worker: only this test claims.
    const h2 = await startHarness();
    try {
      const app = await h2.call("POST", "/api/v1/app", { name: "stale" });
      const ep = await h2.call("POST", `/api/v1/app/${app.body.id}/endpoint`, {
        url: "http://127.0.0.1:9/never",
      });
      expect(ep.status).toBe(201);
      const { messageId } = await enqueueMessage(
        h2.db.pool,
        { appId: app.body.id, eventType: "t", payload: "{}" },
        5,
      );

      const claimOptions = (token: string, workerId: string): ClaimOptions => ({
        workerId,
        claimToken: token,
        limit: 10,
        defaultMaxInFlight: 20,
        defaultTimeoutMs: 1_000,
        leaseMarginMs: 1_000,
      });
      const tokenA = randomUUID();
      const tokenB = randomUUID();
      const claimedA = await claimDeliveries(h2.db.pool, claimOptions(tokenA, "worker-a"));
      expect(claimedA).toHaveLength(1);
      // Under its lease the row is not claimable.
      expect(
        await claimDeliveries(h2.db.pool, claimOptions(randomUUID(), "worker-x")),
      ).toHaveLength(0);

      // Worker A's lease runs out: the row is handed back, and worker B takes it.
      await h2.db.pool.query("update claims set lease_expires_at = now() - interval '1 second'");
      expect(await releaseExpiredClaims(h2.db.pool)).toBe(1);
      expect(await h2.db.pool.query("select * from claims")).toMatchObject({ rowCount: 0 });
      const claimedB = await claimDeliveries(h2.db.pool, claimOptions(tokenB, "worker-b"));
      expect(claimedB).toHaveLength(1);
      expect(claimedB[0]!.id).toBe(claimedA[0]!.id);

      const health = h2.config.health;
      const inFlightCount = async () =>
        (
          await h2.db.pool.query("select in_flight from endpoint_health where endpoint_id = $1", [
            ep.body.id,
          ])
        ).rows[0]?.in_flight;
      const before = (await h2.db.pool.query("select * from deliveries")).rows[0];
      expect(before.status).toBe("in_flight");
      expect(before.claim_token).toBe(tokenB);
      // Say worker B's request is its endpoint's half-open probe (and was A's too).
      await h2.db.pool.query(
        "update endpoint_health set circuit_state = 'half_open', probe_delivery_id = $2 where endpoint_id = $1",
        [ep.body.id, before.id],
      );
      const circuit = async () =>
        (
          await h2.db.pool.query(
            "select circuit_state from endpoint_health where endpoint_id = $1",
            [ep.body.id],
          )
        ).rows[0].circuit_state;

      // Worker A comes back late with a permanent failure: it must not land.
      const stale = await recordResults(
        h2.db.pool,
        [
          resultFor(claimedA[0]!, tokenA, {
            nextStatus: "dead_letter",
            success: false,
            statusCode: 400,
            errorKind: "http",
            error: "HTTP 400",
            isProbe: true,
          }),
        ],
        health,
      );
      expect(stale).toBe(0);
      const after = (await h2.db.pool.query("select * from deliveries")).rows[0];
      expect(after).toEqual(before);
      // Nor does it free worker B's in-flight slot, or reopen the circuit as a failed probe.
      expect(await inFlightCount()).toBe(1);
      expect(await circuit()).toBe("half_open");

      const current = await recordResults(
        h2.db.pool,
        [resultFor(claimedB[0]!, tokenB, { isProbe: true })],
        health,
      );
      expect(current).toBe(1);
      expect(await inFlightCount()).toBe(0);
      expect(await circuit()).toBe("closed");
      const final = (
        await h2.db.pool.query("select * from deliveries where message_id = $1", [messageId])
      ).rows[0];
      expect(final.status).toBe("delivered");
      expect(final.attempt_count).toBe(1);
      expect(final.claim_token).toBeNull();
      expect(final.last_status_code).toBe(200);
      expect(final.delivered_at).not.toBeNull();
    } finally {
      await h2.close();
    }
  });
});

// ---------------------------------------------------------------- claims beside other writers

describe("claims and concurrent writers", () => {
  const options = (over: Partial<ClaimOptions> = {}): ClaimOptions => ({
    workerId: "w",
    claimToken: randomUUID(),
    limit: 100,
    defaultMaxInFlight: 20,
    defaultTimeoutMs: 1_000,
    leaseMarginMs: 30_000,
    ...over,
  });

  async function endpointWithMessages(h2: Harness, n: number): Promise<string> {
    const app = await h2.call("POST", "/api/v1/app", { name: "claims" });
    const ep = await h2.call("POST", `/api/v1/app/${app.body.id}/endpoint`, {
      url: "http://127.0.0.1:9/never",
    });
    for (let i = 0; i < n; i++) {
      await enqueueMessage(
        h2.db.pool,
        { appId: app.body.id, eventType: "t", payload: `{"i":${i}}` },
        5,
      );
    }
    return ep.body.id;
  }

  test("a claim waits for an endpoint's health row held by a result write, then takes its rows", async () => {
    // Its own database and no worker: only this test claims.
    const h2 = await startHarness();
    try {
      const endpointId = await endpointWithMessages(h2, 5);
      let claimed: ClaimedDelivery[] | null = null;
      await withTransaction(h2.db.pool, async (writer) => {
        // what a result write holds between its apply statement and its commit
        await writer.query("select 1 from endpoint_health where endpoint_id = $1 for update", [
          endpointId,
        ]);
        const claim = claimDeliveries(h2.db.pool, options()).then((rows) => {
          claimed = rows;
        });
        await sleep(300);
        expect(claimed).toBeNull(); // waiting, not skipping past the endpoint
        void claim;
      });
      await waitFor(() => claimed !== null, 5_000, "the claim");
      expect(claimed!).toHaveLength(5);
    } finally {
      await h2.close();
    }
  });

  test("claims racing for one endpoint never take a row twice, and its in-flight count is what they took", async () => {
    const h2 = await startHarness();
    try {
      const endpointId = await endpointWithMessages(h2, 30);
      const rounds = await Promise.all(
        Array.from({ length: 6 }, () => claimDeliveries(h2.db.pool, options())),
      );
      const ids = rounds.flat().map((c) => c.id);
      expect(new Set(ids).size).toBe(ids.length);
      expect(ids).toHaveLength(20); // the default max in flight of the endpoint
      const { rows } = await h2.db.pool.query(
        `select (select in_flight from endpoint_health where endpoint_id = $1) as counted,
                (select count(*)::int from deliveries where endpoint_id = $1 and status = 'in_flight') as actual`,
        [endpointId],
      );
      expect(rows[0]).toEqual({ counted: 20, actual: 20 });
    } finally {
      await h2.close();
    }
  });

  test("a claim rewrites its rows in place (no index entries), leases them in one claims row, commits without a flush wait, and the last result ends it", async () => {
    const h2 = await startHarness();
    try {
      const endpointId = await endpointWithMessages(h2, 12);
      const token = randomUUID();
      // The transaction's own statistics: how many of its updates were in place (HOT).
      const claimed = await withTransaction(h2.db.pool, async (client) => {
        // as in production (the test cluster runs with synchronous_commit off)
        await client.query("set local synchronous_commit = on");
        const rows = await claimDeliveries(client, options({ claimToken: token, limit: 10 }));
        const { rows: stats } = await client.query(
          `select pg_stat_get_xact_tuples_updated('deliveries'::regclass)::int as updated,
                  pg_stat_get_xact_tuples_hot_updated('deliveries'::regclass)::int as in_place`,
        );
        expect(stats[0]).toEqual({ updated: 10, in_place: 10 });
        // Its commit does not wait for the WAL flush (a lost claim only makes its rows due
        // again); the setting is the transaction's own.
        const { rows: sync } = await client.query(
          "select current_setting('synchronous_commit') as v",
        );
        expect(sync[0].v).toBe("off");
        return rows;
      });
      expect(claimed).toHaveLength(10);
      const { rows: leases } = await h2.db.pool.query(
        "select token, delivery_ids, lease_expires_at from claims",
      );
      expect(leases).toHaveLength(1);
      expect(leases[0].token).toBe(token);
      expect(leases[0].delivery_ids.map(Number).sort((a: number, b: number) => a - b)).toEqual(
        claimed.map((c) => c.id).sort((a, b) => a - b),
      );
      // lease = the endpoint's timeout (1 s by default here) + the margin (30 s)
      const leaseMs = new Date(leases[0].lease_expires_at).getTime() - Date.now();
      expect(leaseMs).toBeGreaterThan(25_000);
      expect(leaseMs).toBeLessThan(32_000);

      await recordResults(
        h2.db.pool,
        claimed.slice(0, 9).map((c) => resultFor(c, token)),
        h2.config.health,
      );
      expect((await h2.db.pool.query("select 1 from claims")).rowCount).toBe(1);
      await recordResults(
        h2.db.pool,
        [resultFor(claimed[9]!, token, { finishesClaim: true })],
        h2.config.health,
      );
      expect((await h2.db.pool.query("select 1 from claims")).rowCount).toBe(0);
      // Nothing is left to hand back, and the two rows never claimed are still due.
      expect(await releaseExpiredClaims(h2.db.pool)).toBe(0);
      const { rows } = await h2.db.pool.query(
        "select status, count(*)::int as n from deliveries where endpoint_id = $1 group by status order by status",
        [endpointId],
      );
      expect(rows).toEqual([
        { status: "delivered", n: 10 },
        { status: "pending", n: 2 },
      ]);
      // In its own transaction (as the worker runs it) the setting ends with the claim.
      const session = await h2.db.pool.connect();
      try {
        await session.query("set synchronous_commit = on");
        expect(await claimDeliveries(session, options({ limit: 1 }))).toHaveLength(1);
        expect((await session.query("show synchronous_commit")).rows[0].synchronous_commit).toBe(
          "on",
        );
        await session.query("reset synchronous_commit");
      } finally {
        session.release();
      }
    } finally {
      await h2.close();
    }
  });

  test("rows of a claim whose lease ran out are handed back once, with their in-flight slots", async () => {
    const h2 = await startHarness();
    try {
      const endpointId = await endpointWithMessages(h2, 5);
      const first = await claimDeliveries(h2.db.pool, options({ limit: 5 }));
      expect(first).toHaveLength(5);
      // Under the lease: nothing to hand back, and nothing left to claim.
      expect(await releaseExpiredClaims(h2.db.pool)).toBe(0);
      expect(await claimDeliveries(h2.db.pool, options())).toHaveLength(0);

      await h2.db.pool.query(
        "update claims set lease_expires_at = now() - interval '1 millisecond'",
      );
      // Two workers looking at once: each row comes back exactly once.
      const released = await Promise.all([
        releaseExpiredClaims(h2.db.pool),
        releaseExpiredClaims(h2.db.pool),
      ]);
      expect(released[0] + released[1]).toBe(5);
      const { rows } = await h2.db.pool.query(
        `select (select in_flight from endpoint_health where endpoint_id = $1) as in_flight,
                (select count(*)::int from deliveries where endpoint_id = $1 and status = 'pending'
                   and claim_token is null and attempt_count = 0) as pending,
                (select count(*)::int from claims) as claims`,
        [endpointId],
      );
      expect(rows[0]).toEqual({ in_flight: 0, pending: 5, claims: 0 });
      const again = await claimDeliveries(h2.db.pool, options());
      expect(again.map((c) => c.id).sort()).toEqual(first.map((c) => c.id).sort());
    } finally {
      await h2.close();
    }
  });

  test("stop(): a request still running at the drain deadline is cut off and its row released, unused", async () => {
    let requestClosed = false;
    let requests = 0;
    const server = await startRawServer((res) => {
      requests++;
      res.on("close", () => {
        requestClosed = true;
      });
      // never answers
    });
    const h2 = await startHarness({ ssrfAllowlist: ["127.0.0.0/8"] });
    try {
      const app = await h2.call("POST", "/api/v1/app", { name: "drain" });
      const ep = await h2.call("POST", `/api/v1/app/${app.body.id}/endpoint`, {
        url: `${server.url}/hang`,
        timeoutMs: 20_000,
      });
      const msg = await h2.call("POST", `/api/v1/app/${app.body.id}/msg`, {
        eventType: "t",
        payload: { a: 1 },
      });
      const worker = h2.startWorker({ shutdownTimeoutMs: 300 });
      await waitFor(() => requests === 1, 5_000, "the request to reach the server");

      const stoppedAt = Date.now();
      await worker.stop();
      expect(Date.now() - stoppedAt).toBeLessThan(5_000); // the drain deadline, not the 20 s timeout
      await waitFor(() => requestClosed, 3_000, "the request to be cut off");
      const { rows } = await h2.db.pool.query(
        `select d.status, d.attempt_count, d.claim_token,
                (select count(*)::int from attempts a where a.delivery_id = d.id) as attempts,
                (select in_flight from endpoint_health where endpoint_id = d.endpoint_id) as in_flight,
                (select count(*)::int from claims) as claims
         from deliveries d where d.message_id = $1 and d.endpoint_id = $2`,
        [msg.body.id, ep.body.id],
      );
      expect(rows).toEqual([
        {
          status: "pending",
          attempt_count: 0,
          claim_token: null,
          attempts: 0,
          in_flight: 0,
          claims: 0,
        },
      ]);
    } finally {
      await h2.close();
      await server.close();
    }
  });
});
