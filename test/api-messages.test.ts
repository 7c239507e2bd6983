/**
 * Messages through the management API (/api/v1/app/{appId}/msg): 202 with the payload
 * echoed byte for byte, a repeated eventId, get by id or eventId, listing newest first
 * with filters, with_content=false; fan-out to exactly the matching enabled endpoints;
 * Idempotency-Key replays and clashes; resend of a delivered message and its attempts.
 *
 * The management API through app.inject, on a real PostgreSQL (one cloned database for this
 * file). Deliveries go to one real HTTP receiver on 127.0.0.1; the tests that need them
 * start a worker and stop it again when done.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import {
  apiCalls,
  expectClientError,
  isoDate,
  type Json,
  type Page,
  unique,
  V1,
} from "./helpers/api-calls.ts";
import { type Harness, startHarness } from "./helpers/harness.ts";
import { type Receiver, startReceiver, waitFor } from "./helpers/receiver.ts";

let h: Harness;
let rx: Receiver;

beforeAll(async () => {
  // The allow-list keeps 127.0.0.1 endpoints valid once an SSRF guard checks URLs on save.
  h = await startHarness({ ssrfAllowlist: ["127.0.0.0/8"] });
  rx = await startReceiver();
});
afterAll(async () => {
  await h?.close();
  await rx?.close();
});

const { raw, createApp, createEndpoint, sendMessage, deliveryEndpoints } = apiCalls(() => ({
  h,
  rx,
}));

describe("messages", () => {
  test("create answers 202 with msg_ id and echoes the payload byte for byte", async () => {
    const app = await createApp();
    const payloadText =
      '{ "z": 1, "a": [1.50, 2e3, {"n": null}], "big": 123456789012345678901234567890, "s": "é\\u00e9\\n" }';
    const res = await raw(
      "POST",
      `${V1}/app/${app.id}/msg`,
      `{"eventType":"order.created","payload":${payloadText}}`,
    );
    expect(res.statusCode).toBe(202);
    expect(res.headers["content-type"]).toMatch(/application\/json/);
    const body = JSON.parse(res.body);
    expect(body.id).toMatch(/^msg_/);
    expect(body.eventType).toBe("order.created");
    expect(isoDate(body.timestamp)).toBe(true);
    expect(res.body).toContain(`"payload":${payloadText}`);

    const got = await raw("GET", `${V1}/app/${app.id}/msg/${body.id}`);
    expect(got.statusCode).toBe(200);
    expect(got.body).toContain(`"payload":${payloadText}`);
    const { rows } = await h.db.pool.query("select payload from messages where id = $1", [body.id]);
    expect(rows[0].payload).toBe(payloadText);
  });

  test("a repeated eventId returns the original message (200) and creates no deliveries", async () => {
    const app = await createApp();
    await createEndpoint(app.id);
    await createEndpoint(app.id);
    const eventId = unique("evt");
    const first = await h.call("POST", `${V1}/app/${app.id}/msg`, {
      eventType: "t",
      payload: { v: 1 },
      eventId,
    });
    expect(first.status).toBe(202);
    expect(first.body.eventId).toBe(eventId);
    expect(await deliveryEndpoints(first.body.id)).toHaveLength(2);

    const again = await h.call("POST", `${V1}/app/${app.id}/msg`, {
      eventType: "t",
      payload: { v: 2 },
      eventId,
    });
    expect(again.status).toBe(200);
    expect(again.body.id).toBe(first.body.id);
    expect(again.body.payload).toEqual({ v: 1 });
    const { rows } = await h.db.pool.query(
      `select (select count(*)::int from messages where app_id = $1) as messages,
              (select count(*)::int from deliveries where app_id = $1) as deliveries`,
      [app.id],
    );
    expect(rows[0]).toEqual({ messages: 1, deliveries: 2 });

    // The same eventId in another app is another message.
    const other = await createApp();
    const elsewhere = await h.call("POST", `${V1}/app/${other.id}/msg`, {
      eventType: "t",
      payload: {},
      eventId,
    });
    expect(elsewhere.status).toBe(202);
    expect(elsewhere.body.id).not.toBe(first.body.id);
  });

  test("get by id and by eventId", async () => {
    const app = await createApp();
    const eventId = unique("evt");
    const msg = await sendMessage(app.id, {
      eventType: "t",
      payload: { x: "y" },
      eventId,
      tags: ["t1"],
      channels: ["c1"],
    });
    const byId = await h.call("GET", `${V1}/app/${app.id}/msg/${msg.id}`);
    const byEvent = await h.call("GET", `${V1}/app/${app.id}/msg/${eventId}`);
    expect(byId.status).toBe(200);
    expect(byId.body).toMatchObject({
      id: msg.id,
      eventId,
      eventType: "t",
      payload: { x: "y" },
      tags: ["t1"],
      channels: ["c1"],
    });
    expect(byEvent.body).toEqual(byId.body);
    expectClientError(await h.call("GET", `${V1}/app/${app.id}/msg/msg_nope`), /message/, 404);
  });

  test("list is newest first, pages without gaps, filters by event_types", async () => {
    const app = await createApp();
    const types = ["a", "b", "a", "b", "c"];
    const sent: string[] = [];
    for (const [i, eventType] of types.entries())
      sent.push((await sendMessage(app.id, { eventType, payload: { i } })).id);
    const newestFirst = [...sent].reverse();

    const pages: Page[] = [];
    let iterator: string | null = null;
    for (let i = 0; i < 5; i++) {
      const qs: string = iterator ? `&iterator=${iterator}` : "";
      const res = await h.call("GET", `${V1}/app/${app.id}/msg?limit=2${qs}`);
      expect(res.status).toBe(200);
      pages.push(res.body);
      if (res.body.done) break;
      iterator = res.body.iterator;
    }
    expect(pages.map((p) => p.data.length)).toEqual([2, 2, 1]);
    expect(pages.map((p) => p.done)).toEqual([false, false, true]);
    expect(pages.flatMap((p) => p.data.map((m: { id: string }) => m.id))).toEqual(newestFirst);
    expect((pages[0]!.data[0] as Json).payload).toEqual({ i: 4 });

    const back = await h.call(
      "GET",
      `${V1}/app/${app.id}/msg?limit=2&iterator=${pages[1]!.prevIterator}`,
    );
    expect(back.body.data.map((m: { id: string }) => m.id)).toEqual(newestFirst.slice(0, 2));

    const onlyA = await h.call("GET", `${V1}/app/${app.id}/msg?event_types=a`);
    expect(onlyA.body.data.map((m: { id: string }) => m.id)).toEqual([sent[2], sent[0]]);
    const csv = await h.call("GET", `${V1}/app/${app.id}/msg?event_types=a%2Cc`);
    expect(csv.body.data.map((m: { id: string }) => m.id)).toEqual([sent[4], sent[2], sent[0]]);
    const repeated = await h.call("GET", `${V1}/app/${app.id}/msg?event_types=b&event_types=c`);
    expect(repeated.body.data.map((m: { id: string }) => m.id)).toEqual([
      sent[4],
      sent[3],
      sent[1],
    ]);
  });

  test("with_content=false answers payload {}", async () => {
    const app = await createApp();
    const created = await h.call("POST", `${V1}/app/${app.id}/msg?with_content=false`, {
      eventType: "t",
      payload: { secret: 1 },
    });
    expect(created.status).toBe(202);
    expect(created.body.payload).toEqual({});
    const got = await h.call(
      "GET",
      `${V1}/app/${app.id}/msg/${created.body.id}?with_content=false`,
    );
    expect(got.body.payload).toEqual({});
    const list = await h.call("GET", `${V1}/app/${app.id}/msg?with_content=false`);
    expect(list.body.data[0].payload).toEqual({});
    const full = await h.call("GET", `${V1}/app/${app.id}/msg/${created.body.id}`);
    expect(full.body.payload).toEqual({ secret: 1 });
  });
});

describe("fan-out", () => {
  test("deliveries go exactly to the endpoints whose filters match, a disabled one's held", async () => {
    const app = await createApp();
    const typeA = await createEndpoint(app.id, { eventTypes: ["a"] });
    const typeB = await createEndpoint(app.id, { eventTypes: ["b"] });
    const all = await createEndpoint(app.id);
    const disabled = await createEndpoint(app.id, { disabled: true });
    const channel = await createEndpoint(app.id, { channels: ["c1"] });
    const otherApp = await createApp();
    await createEndpoint(otherApp.id);

    const m1 = await sendMessage(app.id, { eventType: "a", payload: {} });
    expect(await deliveryEndpoints(m1.id)).toEqual([typeA.id, all.id, disabled.id].sort());

    const m2 = await sendMessage(app.id, { eventType: "x", payload: {}, channels: ["c1"] });
    expect(await deliveryEndpoints(m2.id)).toEqual([all.id, disabled.id, channel.id].sort());

    const m3 = await sendMessage(app.id, { eventType: "b", payload: {}, channels: ["c2"] });
    expect(await deliveryEndpoints(m3.id)).toEqual([typeB.id, all.id, disabled.id].sort());

    const m4 = await sendMessage(app.id, { eventType: "a", payload: {}, channels: ["c1", "c9"] });
    expect(await deliveryEndpoints(m4.id)).toEqual(
      [typeA.id, all.id, disabled.id, channel.id].sort(),
    );

    // the disabled endpoint (no filters) holds every one (docs/delivery.md, "While an
    // endpoint is disabled")
    const { rows } = await h.db.pool.query(
      "select status, count(*)::int as n from deliveries where endpoint_id = $1 group by status",
      [disabled.id],
    );
    expect(rows).toEqual([{ status: "pending", n: 4 }]);

    // A message that matches nothing is still accepted, with no deliveries.
    const none = await createApp();
    const m5 = await sendMessage(none.id, { eventType: "a", payload: {} });
    expect(await deliveryEndpoints(m5.id)).toEqual([]);
  });
});

describe("idempotency-key", () => {
  test("the same key and body replays the first response; one message row", async () => {
    const app = await createApp();
    const key = unique("idem");
    const text = JSON.stringify({ eventType: "t", payload: { n: 1 } });
    const first = await raw("POST", `${V1}/app/${app.id}/msg`, text, { "idempotency-key": key });
    expect(first.statusCode).toBe(202);
    expect(first.headers["idempotent-replayed"]).toBeUndefined();
    const second = await raw("POST", `${V1}/app/${app.id}/msg`, text, { "idempotency-key": key });
    expect(second.statusCode).toBe(202);
    expect(second.headers["idempotent-replayed"]).toBe("true");
    expect(second.headers["content-type"]).toMatch(/application\/json/);
    expect(second.body).toBe(first.body);
    expect(JSON.parse(second.body).id).toBe(JSON.parse(first.body).id);
    const { rows } = await h.db.pool.query(
      "select count(*)::int as n from messages where app_id = $1",
      [app.id],
    );
    expect(rows[0].n).toBe(1);
  });

  test("the same key with another body is a 4xx JSON error and creates nothing", async () => {
    const app = await createApp();
    const key = unique("idem");
    const first = await h.call(
      "POST",
      `${V1}/app/${app.id}/msg`,
      { eventType: "t", payload: { n: 1 } },
      { "idempotency-key": key },
    );
    expect(first.status).toBe(202);
    const clash = await h.call(
      "POST",
      `${V1}/app/${app.id}/msg`,
      { eventType: "t", payload: { n: 2 } },
      { "idempotency-key": key },
    );
    expect([409, 422]).toContain(clash.status);
    expectClientError(clash, /idempotency/i);
    const { rows } = await h.db.pool.query(
      "select count(*)::int as n from messages where app_id = $1",
      [app.id],
    );
    expect(rows[0].n).toBe(1);
  });

  test("different keys create two messages; an app create replays too", async () => {
    const app = await createApp();
    const body = { eventType: "t", payload: { n: 1 } };
    const a = await h.call("POST", `${V1}/app/${app.id}/msg`, body, {
      "idempotency-key": unique("k"),
    });
    const b = await h.call("POST", `${V1}/app/${app.id}/msg`, body, {
      "idempotency-key": unique("k"),
    });
    expect(a.status).toBe(202);
    expect(b.status).toBe(202);
    expect(a.body.id).not.toBe(b.body.id);
    const { rows } = await h.db.pool.query(
      "select count(*)::int as n from messages where app_id = $1",
      [app.id],
    );
    expect(rows[0].n).toBe(2);

    const key = unique("appkey");
    const name = unique("idem-app");
    const c1 = await h.call("POST", `${V1}/app`, { name }, { "idempotency-key": key });
    const c2 = await h.call("POST", `${V1}/app`, { name }, { "idempotency-key": key });
    expect(c1.status).toBe(201);
    expect(c2.status).toBe(201);
    expect(c2.body.id).toBe(c1.body.id);
    const apps = await h.db.pool.query(
      "select count(*)::int as n from applications where name = $1",
      [name],
    );
    expect(apps.rows[0].n).toBe(1);
  });

  test("an over-long key is a 4xx", async () => {
    const app = await createApp();
    const res = await h.call(
      "POST",
      `${V1}/app/${app.id}/msg`,
      { eventType: "t", payload: {} },
      { "idempotency-key": "k".repeat(300) },
    );
    expectClientError(res, /idempotency-key/);
  });
});

describe("resend", () => {
  test("202 {}; the receiver gets the message again with the same webhook-id; triggerType 1", async () => {
    const app = await createApp();
    const path = `/${unique("resend")}`;
    const ep = await createEndpoint(app.id, { url: `${rx.url}${path}` });
    const payloadText = '{"order":42,  "total":"9.90"}';
    const created = await raw(
      "POST",
      `${V1}/app/${app.id}/msg`,
      `{"eventType":"t","payload":${payloadText}}`,
    );
    const msg = JSON.parse(created.body);
    const worker = h.startWorker();
    try {
      await waitFor(() => rx.on(path).length === 1, 10_000, "first delivery");
      // The delivery row is written back after the request; resend waits for that.
      await waitFor(
        async () => {
          const { rows } = await h.db.pool.query(
            "select status from deliveries where message_id = $1",
            [msg.id],
          );
          return rows[0]?.status === "delivered";
        },
        10_000,
        "delivered status",
      );

      const res = await raw("POST", `${V1}/app/${app.id}/msg/${msg.id}/endpoint/${ep.id}/resend`);
      expect(res.statusCode).toBe(202);
      expect(res.headers["content-type"]).toMatch(/application\/json/);
      expect(JSON.parse(res.body)).toEqual({});

      await waitFor(() => rx.on(path).length === 2, 10_000, "resent delivery");
      const [first, second] = rx.on(path);
      expect(second!.headers["webhook-id"]).toBe(msg.id);
      expect(second!.headers["webhook-id"]).toBe(first!.headers["webhook-id"]);
      expect(second!.body).toBe(payloadText);

      await waitFor(
        async () => {
          const list = await h.call("GET", `${V1}/app/${app.id}/attempt/msg/${msg.id}`);
          return list.body.data.length === 2;
        },
        10_000,
        "two attempts recorded",
      );
    } finally {
      await worker.stop();
    }
    const attempts = await h.call("GET", `${V1}/app/${app.id}/attempt/msg/${msg.id}`);
    expect(attempts.status).toBe(200);
    // Newest first: the manual one, then the scheduled one.
    expect(attempts.body.data.map((a: { triggerType: number }) => a.triggerType)).toEqual([1, 0]);
    for (const a of attempts.body.data) {
      expect(a).toMatchObject({
        msgId: msg.id,
        endpointId: ep.id,
        status: 0,
        statusText: "success",
        responseStatusCode: 200,
      });
      expect(a.id).toMatch(/^atmpt_[A-V][0-9A-Za-z]{10}$/);
      expect(isoDate(a.timestamp)).toBe(true);
    }
    const byEndpoint = await h.call("GET", `${V1}/app/${app.id}/attempt/endpoint/${ep.id}`);
    expect(byEndpoint.body.data).toHaveLength(2);
    const one = await h.call(
      "GET",
      `${V1}/app/${app.id}/msg/${msg.id}/attempt/${attempts.body.data[0].id}`,
    );
    expect(one.status).toBe(200);
    expect(one.body).toEqual(attempts.body.data[0]);
  });

  test("resend to an unknown message or endpoint is 404", async () => {
    const app = await createApp();
    const ep = await createEndpoint(app.id);
    const msg = await sendMessage(app.id, { eventType: "t", payload: {} });
    expectClientError(
      await h.call("POST", `${V1}/app/${app.id}/msg/msg_nope/endpoint/${ep.id}/resend`),
      /message/,
      404,
    );
    expectClientError(
      await h.call("POST", `${V1}/app/${app.id}/msg/${msg.id}/endpoint/ep_nope/resend`),
      /endpoint/,
      404,
    );
  });
});
