/**
 * The management API through app.inject, on a real PostgreSQL (one cloned database for this
 * file). Deliveries go to one real HTTP receiver on 127.0.0.1; the tests that need them
 * start a worker and stop it again when done.
 *
 * Tests named "regression ..." pin defects found in review and fixed.
 */
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createApiKey } from "../src/api/auth.ts";
import { type CallResult, type Harness, startHarness } from "./helpers/harness.ts";
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

// ---------------------------------------------------------------------------------------
// helpers

const V1 = "/api/v1";
type Res = CallResult;
/** A parsed JSON response body (the harness types it loosely). */
type Json = CallResult["body"];
interface Page {
  data: { id: string }[];
  iterator: string | null;
  prevIterator: string | null;
  done: boolean;
}

/** A request with a raw text body (not re-serialized), the admin key unless overridden. */
async function raw(
  method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE",
  url: string,
  payload?: string,
  headers: Record<string, string> = {},
) {
  return h.api.inject({
    method,
    url,
    headers: {
      authorization: `Bearer ${h.adminKey}`,
      ...(payload !== undefined && { "content-type": "application/json" }),
      ...headers,
    },
    payload,
  });
}

let seq = 0;
const unique = (prefix: string) => `${prefix}-${Date.now().toString(36)}-${++seq}`;

async function createApp(body: Record<string, unknown> = {}): Promise<Json> {
  const res = await h.call("POST", `${V1}/app`, { name: unique("app"), ...body });
  expect(res.status).toBe(201);
  return res.body;
}

async function createEndpoint(appId: string, body: Record<string, unknown> = {}): Promise<Json> {
  const res = await h.call("POST", `${V1}/app/${appId}/endpoint`, {
    url: `${rx.url}/${unique("ep")}`,
    ...body,
  });
  expect(res.status).toBe(201);
  return res.body;
}

async function sendMessage(appId: string, body: Record<string, unknown>): Promise<Json> {
  const res = await h.call("POST", `${V1}/app/${appId}/msg`, body);
  expect(res.status).toBe(202);
  return res.body;
}

/** A 4xx answered with `{ code, detail }`, the detail matching `detail`. */
function expectClientError(res: Res, detail: RegExp, status?: number) {
  if (status !== undefined) expect(res.status).toBe(status);
  expect(res.status).toBeGreaterThanOrEqual(400);
  expect(res.status).toBeLessThan(500);
  expect(res.body).toEqual({ code: expect.any(String), detail: expect.any(String) });
  expect(res.body.detail).toMatch(detail);
}

async function deliveryEndpoints(messageId: string): Promise<string[]> {
  const { rows } = await h.db.pool.query(
    "select endpoint_id from deliveries where message_id = $1",
    [messageId],
  );
  return rows.map((r: { endpoint_id: string }) => r.endpoint_id).sort();
}

const isoDate = (s: unknown) => typeof s === "string" && !Number.isNaN(Date.parse(s));
const newSecret = (bytes = 32) => `whsec_${randomBytes(bytes).toString("base64")}`;

// ---------------------------------------------------------------------------------------

describe("applications", () => {
  test("create with and without uid", async () => {
    const uid = unique("uid");
    const withUid = await h.call("POST", `${V1}/app`, {
      name: "With uid",
      uid,
      metadata: { tier: "gold" },
    });
    expect(withUid.status).toBe(201);
    expect(withUid.body).toMatchObject({ name: "With uid", uid, metadata: { tier: "gold" } });
    expect(withUid.body.id).toMatch(/^app_/);
    expect(isoDate(withUid.body.createdAt)).toBe(true);
    expect(isoDate(withUid.body.updatedAt)).toBe(true);

    const without = await h.call("POST", `${V1}/app`, { name: "No uid" });
    expect(without.status).toBe(201);
    expect(without.body).toMatchObject({ name: "No uid", uid: null, metadata: {} });
    expect(without.body.id).not.toBe(withUid.body.id);
  });

  test("get by id and by uid", async () => {
    const uid = unique("uid");
    const app = await createApp({ uid });
    const byId = await h.call("GET", `${V1}/app/${app.id}`);
    const byUid = await h.call("GET", `${V1}/app/${uid}`);
    expect(byId.status).toBe(200);
    expect(byUid.status).toBe(200);
    expect(byId.body).toEqual(app);
    expect(byUid.body).toEqual(app);
  });

  test("list pages with iterators: 3 + 3 + 1, no gaps, prevIterator pages back", async () => {
    // Its own database, so exactly these 7 applications exist.
    const h2 = await startHarness();
    try {
      const created: string[] = [];
      for (let i = 0; i < 7; i++) {
        const res = await h2.call("POST", `${V1}/app`, { name: `p${i}` });
        expect(res.status).toBe(201);
        created.push(res.body.id);
      }
      const pages: Page[] = [];
      let iterator: string | null = null;
      for (let i = 0; i < 5; i++) {
        const qs: string = iterator ? `&iterator=${encodeURIComponent(iterator)}` : "";
        const res = await h2.call("GET", `${V1}/app?limit=3${qs}`);
        expect(res.status).toBe(200);
        pages.push(res.body);
        if (res.body.done) break;
        iterator = res.body.iterator;
      }
      expect(pages.map((p) => p.data.length)).toEqual([3, 3, 1]);
      expect(pages.map((p) => p.done)).toEqual([false, false, true]);
      const seen = pages.flatMap((p) => p.data.map((a: { id: string }) => a.id));
      expect(seen).toEqual(created); // creation order, none twice, none missing
      for (const p of pages) {
        expect(p.iterator).toBe(p.data[p.data.length - 1]!.id);
        expect(p.prevIterator).toBe(`-${p.data[0]!.id}`);
      }

      // Backwards from page 3 gives page 2, from page 2 gives page 1.
      const back2 = await h2.call(
        "GET",
        `${V1}/app?limit=3&iterator=${encodeURIComponent(pages[2]!.prevIterator!)}`,
      );
      expect(back2.status).toBe(200);
      expect(back2.body.data.map((a: { id: string }) => a.id)).toEqual(created.slice(3, 6));
      const back1 = await h2.call(
        "GET",
        `${V1}/app?limit=3&iterator=${encodeURIComponent(back2.body.prevIterator)}`,
      );
      expect(back1.body.data.map((a: { id: string }) => a.id)).toEqual(created.slice(0, 3));

      // Descending order walks the same set the other way.
      const desc = await h2.call("GET", `${V1}/app?limit=250&order=descending`);
      expect(desc.body.data.map((a: { id: string }) => a.id)).toEqual([...created].reverse());
      expect(desc.body.done).toBe(true);
    } finally {
      await h2.close();
    }
  });

  test("PUT updates an existing app, and creates one for an unknown uid", async () => {
    const uid = unique("uid");
    const app = await createApp({ uid, metadata: { a: "1" } });
    const put = await h.call("PUT", `${V1}/app/${uid}`, {
      name: "Renamed",
      uid,
      metadata: { b: "2" },
    });
    expect(put.status).toBe(200);
    expect(put.body).toMatchObject({ id: app.id, uid, name: "Renamed", metadata: { b: "2" } });
    expect(Date.parse(put.body.updatedAt)).toBeGreaterThanOrEqual(Date.parse(app.updatedAt));
    expect((await h.call("GET", `${V1}/app/${app.id}`)).body.name).toBe("Renamed");

    const fresh = unique("new");
    const created = await h.call("PUT", `${V1}/app/${fresh}`, { name: "Upserted" });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ uid: fresh, name: "Upserted" });
    expect((await h.call("GET", `${V1}/app/${fresh}`)).body.id).toBe(created.body.id);
  });

  test("regression upsert-uid: repeated PUT by uid (uid not in the body) keeps one app", async () => {
    // svix.application.upsert(uid, { name }) sends no uid in the body. The first call
    // creates the app with the path as uid; the second must not clear it, or the third
    // call creates a second app.
    const uid = unique("upsert");
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await h.call("PUT", `${V1}/app/${uid}`, { name: `v${i}` });
      ids.push(res.body.id);
    }
    expect(new Set(ids).size).toBe(1);
  });

  test("PATCH changes only the given fields", async () => {
    const uid = unique("uid");
    const app = await createApp({
      uid,
      name: "Before",
      metadata: { keep: "me" },
      throttleRate: 10,
    });
    const p1 = await h.call("PATCH", `${V1}/app/${app.id}`, { name: "After" });
    expect(p1.status).toBe(200);
    expect(p1.body).toMatchObject({
      id: app.id,
      uid,
      name: "After",
      metadata: { keep: "me" },
      throttleRate: 10,
    });
    const p2 = await h.call("PATCH", `${V1}/app/${uid}`, { metadata: { other: "x" } });
    expect(p2.status).toBe(200);
    expect(p2.body).toMatchObject({
      uid,
      name: "After",
      metadata: { other: "x" },
      throttleRate: 10,
    });
    const got = await h.call("GET", `${V1}/app/${app.id}`);
    expect(got.body).toMatchObject({
      name: "After",
      uid,
      metadata: { other: "x" },
      throttleRate: 10,
    });
  });

  test("DELETE answers 204, then the app is 404", async () => {
    const app = await createApp();
    const del = await h.call("DELETE", `${V1}/app/${app.id}`);
    expect(del.status).toBe(204);
    expect(del.body).toBeNull();
    const got = await h.call("GET", `${V1}/app/${app.id}`);
    expectClientError(got, /application/, 404);
    expect(got.body.code).toBe("not_found");
    expect((await h.call("DELETE", `${V1}/app/${app.id}`)).status).toBe(404);
  });

  test("a duplicate uid is 409, on create and on PATCH", async () => {
    const uid = unique("dup");
    await createApp({ uid });
    const dup = await h.call("POST", `${V1}/app`, { name: "again", uid });
    expectClientError(dup, /uid/, 409);
    const other = await createApp();
    const patched = await h.call("PATCH", `${V1}/app/${other.id}`, { uid });
    expectClientError(patched, /uid/, 409);
  });
});

// ---------------------------------------------------------------------------------------

describe("endpoints", () => {
  test("create with every field; the response reflects them", async () => {
    const app = await createApp();
    const body = {
      url: `${rx.url}/full`,
      description: "all fields",
      eventTypes: ["order.created", "order.paid"],
      channels: ["eu"],
      metadata: { team: "growth" },
      headers: { "X-Partner": "acme" },
      uid: unique("ep"),
      timeoutMs: 5_000,
      maxAttempts: 3,
      retryBaseMs: 100,
      retryCapMs: 1_000,
      maxInFlight: 4,
    };
    const res = await h.call("POST", `${V1}/app/${app.id}/endpoint`, body);
    expect(res.status).toBe(201);
    const { headers: _headers, ...echoed } = body;
    expect(res.body).toMatchObject({ ...echoed, disabled: false });
    expect(res.body.id).toMatch(/^ep_/);
    expect(isoDate(res.body.createdAt)).toBe(true);
    const { rows } = await h.db.pool.query("select headers from endpoints where id = $1", [
      res.body.id,
    ]);
    expect(rows[0].headers).toEqual({ "X-Partner": "acme" });
  });

  test("the older filterTypes name is accepted and shown as eventTypes", async () => {
    const app = await createApp();
    const ep = await createEndpoint(app.id, { filterTypes: ["legacy.type"] });
    expect(ep.eventTypes).toEqual(["legacy.type"]);
    const got = await h.call("GET", `${V1}/app/${app.id}/endpoint/${ep.id}`);
    expect(got.body.eventTypes).toEqual(["legacy.type"]);
  });

  test("get by id and uid, list with pagination", async () => {
    const app = await createApp();
    const uid = unique("ep");
    const a = await createEndpoint(app.id, { uid });
    const b = await createEndpoint(app.id);
    const c = await createEndpoint(app.id);
    expect((await h.call("GET", `${V1}/app/${app.id}/endpoint/${a.id}`)).body).toEqual(a);
    expect((await h.call("GET", `${V1}/app/${app.id}/endpoint/${uid}`)).body).toEqual(a);

    const p1 = await h.call("GET", `${V1}/app/${app.id}/endpoint?limit=2`);
    expect(p1.status).toBe(200);
    expect(p1.body.data.map((e: { id: string }) => e.id)).toEqual([a.id, b.id]);
    expect(p1.body.done).toBe(false);
    const p2 = await h.call(
      "GET",
      `${V1}/app/${app.id}/endpoint?limit=2&iterator=${p1.body.iterator}`,
    );
    expect(p2.body.data.map((e: { id: string }) => e.id)).toEqual([c.id]);
    expect(p2.body.done).toBe(true);
  });

  test("PATCH changes only the given fields; PUT replaces; PUT on an unknown uid creates", async () => {
    const app = await createApp();
    const ep = await createEndpoint(app.id, {
      description: "d1",
      eventTypes: ["a"],
      channels: ["c"],
      maxAttempts: 7,
      metadata: { k: "v" },
    });
    const patched = await h.call("PATCH", `${V1}/app/${app.id}/endpoint/${ep.id}`, {
      description: "d2",
    });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({
      id: ep.id,
      url: ep.url,
      description: "d2",
      eventTypes: ["a"],
      channels: ["c"],
      maxAttempts: 7,
      metadata: { k: "v" },
      disabled: false,
    });

    const disabled = await h.call("PATCH", `${V1}/app/${app.id}/endpoint/${ep.id}`, {
      disabled: true,
    });
    expect(disabled.body).toMatchObject({ disabled: true, description: "d2", eventTypes: ["a"] });

    const url = `${rx.url}/replaced`;
    const put = await h.call("PUT", `${V1}/app/${app.id}/endpoint/${ep.id}`, {
      url,
      eventTypes: ["b"],
    });
    expect(put.status).toBe(200);
    expect(put.body).toMatchObject({
      id: ep.id,
      url,
      eventTypes: ["b"],
      description: "",
      channels: null,
      maxAttempts: null,
      metadata: {},
      disabled: false,
    });

    const uid = unique("put");
    const created = await h.call("PUT", `${V1}/app/${app.id}/endpoint/${uid}`, { url });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ uid, url });
    const again = await h.call("GET", `${V1}/app/${app.id}/endpoint/${uid}`);
    expect(again.body.id).toBe(created.body.id);
  });

  test("regression upsert-uid: repeated endpoint PUT by uid (uid not in the body) keeps one endpoint", async () => {
    const app = await createApp();
    const uid = unique("upsert");
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await h.call("PUT", `${V1}/app/${app.id}/endpoint/${uid}`, {
        url: `${rx.url}/upsert`,
      });
      ids.push(res.body.id);
    }
    // Two endpoints with the same URL would each get every message.
    expect(new Set(ids).size).toBe(1);
  });

  test("DELETE answers 204, then the endpoint is 404", async () => {
    const app = await createApp();
    const ep = await createEndpoint(app.id);
    expect((await h.call("DELETE", `${V1}/app/${app.id}/endpoint/${ep.id}`)).status).toBe(204);
    expectClientError(
      await h.call("GET", `${V1}/app/${app.id}/endpoint/${ep.id}`),
      /endpoint/,
      404,
    );
    const list = await h.call("GET", `${V1}/app/${app.id}/endpoint`);
    expect(list.body.data).toEqual([]);
  });

  test("secrets: generated whsec_ key, a supplied one is kept, bad ones are refused, rotation", async () => {
    const app = await createApp();
    const ep = await createEndpoint(app.id);
    const s1 = await h.call("GET", `${V1}/app/${app.id}/endpoint/${ep.id}/secret`);
    expect(s1.status).toBe(200);
    expect(Object.keys(s1.body)).toEqual(["key"]);
    expect(s1.body.key).toMatch(/^whsec_[A-Za-z0-9+/]+=*$/);
    const bytes = Buffer.from(s1.body.key.slice(6), "base64").length;
    expect(bytes).toBeGreaterThanOrEqual(24);
    expect(bytes).toBeLessThanOrEqual(64);

    const mine = newSecret();
    const withSecret = await createEndpoint(app.id, { secret: mine });
    expect(
      (await h.call("GET", `${V1}/app/${app.id}/endpoint/${withSecret.id}/secret`)).body.key,
    ).toBe(mine);
    // Without the prefix it is accepted too (Svix: "optionally prefixed with whsec_").
    const bare = randomBytes(24).toString("base64");
    const bareEp = await createEndpoint(app.id, { secret: bare });
    expect((await h.call("GET", `${V1}/app/${app.id}/endpoint/${bareEp.id}/secret`)).body.key).toBe(
      `whsec_${bare}`,
    );

    for (const secret of [
      "whsec_not*base64!",
      `whsec_${randomBytes(8).toString("base64")}`,
      "whsec_",
    ]) {
      const res = await h.call("POST", `${V1}/app/${app.id}/endpoint`, {
        url: `${rx.url}/s`,
        secret,
      });
      expectClientError(res, /secret/);
    }
    const { rows } = await h.db.pool.query(
      "select count(*)::int as n from endpoints where app_id = $1",
      [app.id],
    );
    expect(rows[0].n).toBe(3); // the refused ones were not created

    const rot = await raw("POST", `${V1}/app/${app.id}/endpoint/${ep.id}/secret/rotate`, "{}");
    expect(rot.statusCode).toBe(204);
    const s2 = await h.call("GET", `${V1}/app/${app.id}/endpoint/${ep.id}/secret`);
    expect(s2.body.key).toMatch(/^whsec_/);
    expect(s2.body.key).not.toBe(s1.body.key);
    // Rotation to a given key, with no body at all also accepted.
    const given = newSecret();
    const rot2 = await h.call("POST", `${V1}/app/${app.id}/endpoint/${ep.id}/secret/rotate`, {
      key: given,
    });
    expect(rot2.status).toBe(204);
    expect((await h.call("GET", `${V1}/app/${app.id}/endpoint/${ep.id}/secret`)).body.key).toBe(
      given,
    );
    const rot3 = await raw("POST", `${V1}/app/${app.id}/endpoint/${ep.id}/secret/rotate`);
    expect(rot3.statusCode).toBe(204);
    const bad = await h.call("POST", `${V1}/app/${app.id}/endpoint/${ep.id}/secret/rotate`, {
      key: "whsec_short",
    });
    expectClientError(bad, /secret/);
  });

  test("custom headers arrive at the receiver; reserved header names are refused", async () => {
    const app = await createApp();
    for (const name of ["webhook-signature", "Content-Type", "Webhook-Id", "host"]) {
      const res = await h.call("POST", `${V1}/app/${app.id}/endpoint`, {
        url: `${rx.url}/reserved`,
        headers: { [name]: "x" },
      });
      expectClientError(res, new RegExp(name, "i"));
    }
    const path = `/${unique("headers")}`;
    await createEndpoint(app.id, {
      url: `${rx.url}${path}`,
      headers: { "X-Partner": "acme", "x-trace": "t-1" },
    });
    const msg = await sendMessage(app.id, { eventType: "t", payload: { n: 1 } });
    const worker = h.startWorker();
    try {
      await waitFor(() => rx.on(path).length === 1, 10_000, "delivery with custom headers");
    } finally {
      await worker.stop();
    }
    const req = rx.on(path)[0]!;
    expect(req.headers["x-partner"]).toBe("acme");
    expect(req.headers["x-trace"]).toBe("t-1");
    expect(req.headers["webhook-id"]).toBe(msg.id);
    expect(req.headers["content-type"]).toBe("application/json");
  });

  test("endpoint routes of an unknown app or endpoint are 404", async () => {
    const app = await createApp();
    expectClientError(await h.call("GET", `${V1}/app/app_nope/endpoint`), /application/, 404);
    expectClientError(await h.call("GET", `${V1}/app/${app.id}/endpoint/ep_nope`), /endpoint/, 404);
    expectClientError(
      await h.call("GET", `${V1}/app/${app.id}/endpoint/ep_nope/secret`),
      /endpoint/,
      404,
    );
    expectClientError(
      await h.call("PATCH", `${V1}/app/${app.id}/endpoint/ep_nope`, { description: "x" }),
      /endpoint/,
      404,
    );
    expectClientError(
      await h.call("DELETE", `${V1}/app/${app.id}/endpoint/ep_nope`),
      /endpoint/,
      404,
    );
    expectClientError(
      await h.call("POST", `${V1}/app/${app.id}/endpoint/ep_nope/secret/rotate`, {}),
      /endpoint/,
      404,
    );
  });
});

// ---------------------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------------------

describe("fan-out", () => {
  test("deliveries go exactly to the enabled endpoints whose filters match", async () => {
    const app = await createApp();
    const typeA = await createEndpoint(app.id, { eventTypes: ["a"] });
    const typeB = await createEndpoint(app.id, { eventTypes: ["b"] });
    const all = await createEndpoint(app.id);
    const disabled = await createEndpoint(app.id, { disabled: true });
    const channel = await createEndpoint(app.id, { channels: ["c1"] });
    const otherApp = await createApp();
    await createEndpoint(otherApp.id);

    const m1 = await sendMessage(app.id, { eventType: "a", payload: {} });
    expect(await deliveryEndpoints(m1.id)).toEqual([typeA.id, all.id].sort());

    const m2 = await sendMessage(app.id, { eventType: "x", payload: {}, channels: ["c1"] });
    expect(await deliveryEndpoints(m2.id)).toEqual([all.id, channel.id].sort());

    const m3 = await sendMessage(app.id, { eventType: "b", payload: {}, channels: ["c2"] });
    expect(await deliveryEndpoints(m3.id)).toEqual([typeB.id, all.id].sort());

    const m4 = await sendMessage(app.id, { eventType: "a", payload: {}, channels: ["c1", "c9"] });
    expect(await deliveryEndpoints(m4.id)).toEqual([typeA.id, all.id, channel.id].sort());

    const { rows } = await h.db.pool.query(
      "select count(*)::int as n from deliveries where endpoint_id = $1",
      [disabled.id],
    );
    expect(rows[0].n).toBe(0);

    // A message that matches nothing is still accepted, with no deliveries.
    const none = await createApp();
    const m5 = await sendMessage(none.id, { eventType: "a", payload: {} });
    expect(await deliveryEndpoints(m5.id)).toEqual([]);
  });
});

// ---------------------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------------------

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
      expect(a.id).toMatch(/^atmpt_/);
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

// ---------------------------------------------------------------------------------------

describe("bad input: a 4xx with { code, detail }, never a 5xx", () => {
  let appId: string;
  let epId: string;
  beforeAll(async () => {
    const app = await createApp();
    appId = app.id;
    epId = (await createEndpoint(appId)).id;
  });

  test("malformed JSON", async () => {
    const res = await raw("POST", `${V1}/app`, '{"name": "x",');
    expect(res.statusCode).toBe(400);
    const body = res.json();
    expect(body.code).toBe("invalid_json");
    expect(body.detail).toMatch(/JSON/);
    const msg = await raw("POST", `${V1}/app/${appId}/msg`, '{"eventType":"t","payload":{"a":}}');
    expect(msg.statusCode).toBe(400);
    expect(msg.json().detail).toMatch(/JSON/);
  });

  test("unknown fields are named", async () => {
    expectClientError(await h.call("POST", `${V1}/app`, { name: "x", colour: "red" }), /colour/);
    expectClientError(await h.call("PATCH", `${V1}/app/${appId}`, { nmae: "x" }), /nmae/);
    expectClientError(
      await h.call("POST", `${V1}/app/${appId}/endpoint`, {
        url: `${rx.url}/u`,
        filterTyps: ["a"],
      }),
      /filterTyps/,
    );
    expectClientError(
      await h.call("PATCH", `${V1}/app/${appId}/endpoint/${epId}`, { secretKey: "x" }),
      /secretKey/,
    );
    expectClientError(
      await h.call("POST", `${V1}/app/${appId}/msg`, { eventType: "t", payload: {}, evenId: "x" }),
      /evenId/,
    );
  });

  test("missing required fields are named", async () => {
    expectClientError(await h.call("POST", `${V1}/app`, {}), /name/);
    expectClientError(
      await h.call("POST", `${V1}/app/${appId}/endpoint`, { description: "x" }),
      /url/,
    );
    expectClientError(await h.call("POST", `${V1}/app/${appId}/msg`, { payload: {} }), /eventType/);
    expectClientError(
      await h.call("POST", `${V1}/app/${appId}/msg`, { eventType: "t" }),
      /payload/,
    );
    expectClientError(await h.call("POST", `${V1}/app`, ""), /body/);
  });

  test("wrong types are named and not coerced", async () => {
    expectClientError(await h.call("POST", `${V1}/app`, { name: 5 }), /name/);
    expectClientError(
      await h.call("POST", `${V1}/app`, { name: "x", metadata: { a: 1 } }),
      /metadata/,
    );
    expectClientError(
      await h.call("POST", `${V1}/app/${appId}/endpoint`, { url: `${rx.url}/u`, eventTypes: "a" }),
      /eventTypes/,
    );
    expectClientError(
      await h.call("POST", `${V1}/app/${appId}/endpoint`, { url: `${rx.url}/u`, maxAttempts: "5" }),
      /maxAttempts/,
    );
    expectClientError(
      await h.call("POST", `${V1}/app/${appId}/endpoint`, { url: `${rx.url}/u`, disabled: "true" }),
      /disabled/,
    );
    expectClientError(
      await h.call("POST", `${V1}/app/${appId}/endpoint`, { url: `${rx.url}/u`, timeoutMs: 1 }),
      /timeoutMs/,
    );
    expectClientError(
      await h.call("POST", `${V1}/app/${appId}/msg`, { eventType: 1, payload: {} }),
      /eventType/,
    );
    expectClientError(
      await h.call("POST", `${V1}/app/${appId}/msg`, {
        eventType: "t",
        payload: {},
        channels: "c",
      }),
      /channels/,
    );
    expectClientError(await h.call("POST", `${V1}/app`, [{ name: "x" }]), /body/);
  });

  test("bad endpoint URLs", async () => {
    for (const url of [
      "not a url",
      "ftp://x",
      "javascript:alert(1)",
      "file:///etc/passwd",
      "http://",
      "",
    ]) {
      expectClientError(await h.call("POST", `${V1}/app/${appId}/endpoint`, { url }), /url/);
    }
    expectClientError(
      await h.call("PATCH", `${V1}/app/${appId}/endpoint/${epId}`, { url: "ftp://x" }),
      /url/,
    );
    expectClientError(
      await h.call("PUT", `${V1}/app/${appId}/endpoint/${epId}`, { url: "not a url" }),
      /url/,
    );
  });

  test("a payload that is not an object", async () => {
    expectClientError(
      await h.call("POST", `${V1}/app/${appId}/msg`, { eventType: "t", payload: [1, 2] }),
      /payload/,
    );
    expectClientError(
      await h.call("POST", `${V1}/app/${appId}/msg`, { eventType: "t", payload: "text" }),
      /payload/,
    );
    expectClientError(
      await h.call("POST", `${V1}/app/${appId}/msg`, { eventType: "t", payload: null }),
      /payload/,
    );
  });

  test("a body over 1 MiB is 413", async () => {
    const big = JSON.stringify({ eventType: "t", payload: { s: "x".repeat(1024 * 1024 + 10) } });
    const res = await raw("POST", `${V1}/app/${appId}/msg`, big);
    expect(res.statusCode).toBe(413);
    expect(res.json()).toEqual({ code: "payload_too_large", detail: expect.any(String) });
    const { rows } = await h.db.pool.query(
      "select count(*)::int as n from messages where app_id = $1",
      [appId],
    );
    expect(rows[0].n).toBe(0);
    // Just under the limit is fine.
    const ok = await raw(
      "POST",
      `${V1}/app/${appId}/msg`,
      JSON.stringify({ eventType: "t", payload: { s: "x".repeat(1000 * 1000) } }),
    );
    expect(ok.statusCode).toBe(202);
  });

  test("unknown app, endpoint and message ids are 404", async () => {
    expectClientError(await h.call("GET", `${V1}/app/app_doesnotexist`), /application/, 404);
    expectClientError(
      await h.call("PATCH", `${V1}/app/app_doesnotexist`, { name: "x" }),
      /application/,
      404,
    );
    expectClientError(
      await h.call("POST", `${V1}/app/app_doesnotexist/msg`, { eventType: "t", payload: {} }),
      /application/,
      404,
    );
    expectClientError(
      await h.call("GET", `${V1}/app/${appId}/endpoint/ep_doesnotexist`),
      /endpoint/,
      404,
    );
    expectClientError(
      await h.call("GET", `${V1}/app/${appId}/msg/msg_doesnotexist`),
      /message/,
      404,
    );
    expectClientError(
      await h.call("GET", `${V1}/app/${appId}/attempt/msg/msg_doesnotexist`),
      /message/,
      404,
    );
    expectClientError(
      await h.call("GET", `${V1}/app/${appId}/attempt/endpoint/ep_doesnotexist`),
      /endpoint/,
      404,
    );
    expectClientError(await h.call("GET", `${V1}/nothing-here`), /route/, 404);
  });

  test("bad iterators and limits", async () => {
    expectClientError(await h.call("GET", `${V1}/app?iterator=-`), /iterator/);
    expectClientError(await h.call("GET", `${V1}/app?iterator=${"x".repeat(200)}`), /iterator/);
    expectClientError(
      await h.call("GET", `${V1}/app/${appId}/attempt/endpoint/${epId}?iterator=atmpt_abc`),
      /iterator/,
    );
    for (const limit of ["0", "1000", "-1", "abc", "2.5"]) {
      expectClientError(await h.call("GET", `${V1}/app?limit=${limit}`), /limit/);
      expectClientError(await h.call("GET", `${V1}/app/${appId}/msg?limit=${limit}`), /limit/);
    }
    expectClientError(await h.call("GET", `${V1}/app?order=sideways`), /order/);
    expectClientError(await h.call("GET", `${V1}/app/${appId}/msg?before=yesterday`), /before/);
  });

  test("authentication: missing, wrong key and Basic scheme are 401", async () => {
    for (const authorization of [
      undefined,
      "Bearer wrong-key",
      "Basic x",
      `Basic ${h.adminKey}`,
      "Bearer",
      h.adminKey,
    ]) {
      const res = await h.api.inject({
        method: "GET",
        url: `${V1}/app`,
        headers: authorization === undefined ? {} : { authorization },
      });
      expect(res.statusCode, `authorization: ${authorization}`).toBe(401);
      expect(res.json()).toEqual({ code: "unauthorized", detail: expect.stringMatching(/Bearer/) });
    }
    const post = await h.api.inject({
      method: "POST",
      url: `${V1}/app/${appId}/msg`,
      headers: { "content-type": "application/json" },
      payload: JSON.stringify({ eventType: "t", payload: {} }),
    });
    expect(post.statusCode).toBe(401);
  });

  test("prototype-pollution bodies are refused", async () => {
    const res = await raw("POST", `${V1}/app`, '{"name":"x","__proto__":{"isAdmin":true}}');
    expectClientError({ status: res.statusCode, body: res.json(), headers: {} }, /prototype/);
    const ctor = await raw("POST", `${V1}/app`, '{"name":"x","constructor":{"prototype":{"x":1}}}');
    expectClientError({ status: ctor.statusCode, body: ctor.json(), headers: {} }, /prototype/);
    expect(({} as Record<string, unknown>).isAdmin).toBeUndefined();
  });

  test("a body that is not JSON is refused with a 4xx JSON error", async () => {
    const res = await raw("POST", `${V1}/app`, '{"name":"x"}', { "content-type": "text/plain" });
    expectClientError({ status: res.statusCode, body: res.json(), headers: {} }, /./);
    const form = await raw("POST", `${V1}/app`, "name=x", {
      "content-type": "application/x-www-form-urlencoded",
    });
    expect(form.statusCode).toBe(415);
    expect(form.json()).toEqual({ code: "unsupported_media_type", detail: expect.any(String) });
  });

  test("regression text/plain: a text/plain body is 415, not parsed and validated", async () => {
    const res = await raw("POST", `${V1}/app`, '{"name":"x"}', { "content-type": "text/plain" });
    expect(res.statusCode).toBe(415);
  });

  test("regression iterator: an iterator that is no id of the listing is a 4xx", async () => {
    const res = await h.call("GET", `${V1}/app?iterator=not-an-id`);
    expect(res.status).toBeGreaterThanOrEqual(400);
    expect(res.status).toBeLessThan(500);
  });

  test("regression nul: NUL characters in strings are a 4xx, not a 500", async () => {
    const res = await h.call("POST", `${V1}/app`, { name: "a\u0000b" });
    expect(res.status).toBeLessThan(500);
  });

  test("regression nul: a NUL in a path or query parameter is a 4xx, not a 500", async () => {
    const res = await h.call("GET", `${V1}/app/a%00b`);
    expect(res.status).toBeLessThan(500);
  });

  test("regression header-value: a custom header value with CR/LF is refused when saved", async () => {
    const res = await h.call("POST", `${V1}/app/${appId}/endpoint`, {
      url: `${rx.url}/crlf`,
      headers: { "X-Injected": "a\r\nX-Evil: 1" },
    });
    expect(res.status).toBeGreaterThanOrEqual(400);
  });

  test("regression framework-errors: router errors (bad %-encoding) answer { code, detail }", async () => {
    const res = await h.call("GET", `${V1}/app/%E0%A4%A`);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ code: expect.any(String), detail: expect.any(String) });
  });
});

// ---------------------------------------------------------------------------------------

describe("unauthenticated routes", () => {
  test("GET /healthz is 200 without auth", async () => {
    const res = await h.api.inject({ method: "GET", url: "/healthz" });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ status: "ok" });
  });

  test("GET /docs/json is an OpenAPI document listing the API", async () => {
    const res = await h.api.inject({ method: "GET", url: "/docs/json" });
    expect(res.statusCode).toBe(200);
    const doc = res.json();
    expect(doc.openapi).toMatch(/^3\./);
    expect(Object.keys(doc.paths)).toEqual(
      expect.arrayContaining([
        "/api/v1/app",
        "/api/v1/app/{appId}",
        "/api/v1/app/{appId}/endpoint",
        "/api/v1/app/{appId}/msg",
        "/api/v1/app/{appId}/msg/{msgId}/endpoint/{endpointId}/resend",
      ]),
    );
    expect(doc.paths["/api/v1/app"].post).toBeDefined();
  });
});

// ---------------------------------------------------------------------------------------

describe("app-scoped keys", () => {
  test("see their own app only; everything of another app is 404", async () => {
    const mineUid = unique("mine");
    const mine = await createApp({ uid: mineUid });
    const theirsUid = unique("theirs");
    const theirs = await createApp({ uid: theirsUid });
    const myEp = await createEndpoint(mine.id);
    const theirEp = await createEndpoint(theirs.id);
    const myMsg = await sendMessage(mine.id, { eventType: "t", payload: {} });
    const theirMsg = await sendMessage(theirs.id, { eventType: "t", payload: {} });
    const { key } = await createApiKey(h.db.pool, { role: "app", appId: mine.id });
    const as = (method: string, url: string, body?: unknown) =>
      h.call(method, url, body, { authorization: `Bearer ${key}` });

    expect((await as("GET", `${V1}/app/${mine.id}`)).body.id).toBe(mine.id);
    expect((await as("GET", `${V1}/app/${mineUid}`)).body.id).toBe(mine.id);
    expect((await as("GET", `${V1}/app/${mine.id}/endpoint/${myEp.id}`)).status).toBe(200);
    expect((await as("GET", `${V1}/app/${mine.id}/msg/${myMsg.id}`)).status).toBe(200);
    expect(
      (await as("POST", `${V1}/app/${mine.id}/msg`, { eventType: "t", payload: {} })).status,
    ).toBe(202);

    const list = await as("GET", `${V1}/app`);
    expect(list.status).toBe(200);
    expect(list.body.data.map((a: { id: string }) => a.id)).toEqual([mine.id]);
    expect(list.body.done).toBe(true);

    const denied: [string, string, unknown?][] = [
      ["GET", `${V1}/app/${theirs.id}`],
      ["GET", `${V1}/app/${theirsUid}`],
      ["PATCH", `${V1}/app/${theirs.id}`, { name: "x" }],
      ["PUT", `${V1}/app/${theirs.id}`, { name: "x" }],
      ["DELETE", `${V1}/app/${theirs.id}`],
      ["GET", `${V1}/app/${theirs.id}/endpoint`],
      ["GET", `${V1}/app/${theirs.id}/endpoint/${theirEp.id}`],
      ["GET", `${V1}/app/${theirs.id}/endpoint/${theirEp.id}/secret`],
      ["POST", `${V1}/app/${theirs.id}/endpoint`, { url: `${rx.url}/x` }],
      ["GET", `${V1}/app/${theirs.id}/msg`],
      ["GET", `${V1}/app/${theirs.id}/msg/${theirMsg.id}`],
      ["POST", `${V1}/app/${theirs.id}/msg`, { eventType: "t", payload: {} }],
      ["GET", `${V1}/app/${theirs.id}/attempt/msg/${theirMsg.id}`],
      ["POST", `${V1}/app/${theirs.id}/msg/${theirMsg.id}/endpoint/${theirEp.id}/resend`],
      // Another app's resources named under my own app.
      ["GET", `${V1}/app/${mine.id}/endpoint/${theirEp.id}`],
      ["GET", `${V1}/app/${mine.id}/msg/${theirMsg.id}`],
      ["POST", `${V1}/app/${mine.id}/msg/${theirMsg.id}/endpoint/${myEp.id}/resend`],
    ];
    for (const [method, url, body] of denied) {
      const res = await as(method, url, body);
      expect(res.status, `${method} ${url}`).toBe(404);
      expect(res.body.code).toBe("not_found");
    }
    // Nothing of theirs changed.
    const still = await h.call("GET", `${V1}/app/${theirs.id}`);
    expect(still.body).toEqual(theirs);
    const theirCount = await h.db.pool.query(
      "select count(*)::int as n from messages where app_id = $1",
      [theirs.id],
    );
    expect(theirCount.rows[0].n).toBe(1);

    // Creating applications is for admins.
    const create = await as("POST", `${V1}/app`, { name: "nope" });
    expect(create.status).toBeGreaterThanOrEqual(400);
    expect(create.status).toBeLessThan(500);
  });
});
