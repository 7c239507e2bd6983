/**
 * The svix client's everyday endpoint calls against hookrelay on a real port: endpoint
 * headers (get masked, set, patch), endpoint stats, health, the older dashboard-access link
 * and the transformation calls hookrelay does not support. Bad input answers stable codes,
 * and an app-scoped key reaches only its own app's endpoints.
 */
import type { AddressInfo } from "node:net";
import { ApiException, Svix } from "svix";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createApiKey } from "../src/api/auth.ts";
import { type Harness, startHarness } from "./helpers/harness.ts";
import { type Receiver, startReceiver, waitFor } from "./helpers/receiver.ts";
import { HOUR, newApp, newEndpoint, seed, V1 } from "./helpers/seeded-deliveries.ts";

let h: Harness;
let rx: Receiver;
let svix: Svix;
let base: string;

beforeAll(async () => {
  h = await startHarness({ ssrfAllowlist: ["127.0.0.0/8"] });
  rx = await startReceiver();
  await h.api.listen({ host: "127.0.0.1", port: 0 });
  base = `http://127.0.0.1:${(h.api.server.address() as AddressInfo).port}`;
  svix = new Svix(h.adminKey, { serverUrl: base });
});
afterAll(async () => {
  await h?.close();
  await rx?.close();
});

/** The ApiException a call throws (its status and `{ code, detail }` body). */
async function failure(call: Promise<unknown> | (() => Promise<unknown>)) {
  const err = await (typeof call === "function" ? call() : call).then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ApiException);
  const e = err as ApiException<{ code: string; detail: string }>;
  return { status: e.code, code: e.body?.code, detail: e.body?.detail };
}

describe("endpoint headers", () => {
  let appId: string;
  let epId: string;

  beforeAll(async () => {
    appId = await newApp(h, `hdr-${Date.now().toString(36)}`);
    epId = (
      await newEndpoint(h, appId, {
        url: `${rx.url}/headers-hook`,
        uid: "billing",
        headers: { "X-Team": "payments", Authorization: "Bearer s3cret-token" },
      })
    ).id;
  });

  test("getHeaders: what the endpoint body set, sensitive values masked and named", async () => {
    const got = await svix.endpoint.getHeaders(appId, epId);
    expect(got).toEqual({
      headers: { "X-Team": "payments", Authorization: "***" },
      sensitive: ["Authorization"],
    });
    // by uid too
    expect((await svix.endpoint.getHeaders(appId, "billing")).headers["X-Team"]).toBe("payments");
  });

  test("setHeaders (PUT) replaces them all; they are what the next delivery carries", async () => {
    await svix.endpoint.setHeaders(appId, epId, {
      headers: {
        "X-Api-Key": "k-123456",
        Cookie: "sid=abc",
        "X-Region": "eu",
        Authorization: "***", // the mask GET answered: keeps the stored value
      },
    });
    const got = await svix.endpoint.getHeaders(appId, epId);
    expect(got.headers).toEqual({
      "X-Api-Key": "***",
      Cookie: "***",
      "X-Region": "eu",
      Authorization: "***",
    });
    expect([...got.sensitive].sort()).toEqual(["Authorization", "Cookie", "X-Api-Key"]);
    expect(got.headers["X-Team"]).toBeUndefined();

    await svix.message.create(appId, { eventType: "h.test", payload: { n: 1 } });
    const worker = h.startWorker();
    await waitFor(() => rx.on("/headers-hook").length === 1, 10_000, "the delivery");
    await worker.stop();
    const sent = rx.on("/headers-hook")[0]!.headers;
    expect(sent["x-api-key"]).toBe("k-123456");
    expect(sent.cookie).toBe("sid=abc");
    expect(sent["x-region"]).toBe("eu");
    expect(sent.authorization).toBe("Bearer s3cret-token");
    expect(sent["x-team"]).toBeUndefined();
  });

  test("patchHeaders merges; a null value or deleteHeaders removes; names are case-insensitive", async () => {
    await svix.endpoint.patchHeaders(appId, epId, {
      headers: { "x-region": "us", "X-New": "1" },
      deleteHeaders: ["cookie"],
    });
    let got = await svix.endpoint.getHeaders(appId, epId);
    expect(got.headers).toEqual({
      "X-Api-Key": "***",
      Authorization: "***",
      "x-region": "us",
      "X-New": "1",
    });
    // svix 1 and Svix's server: a null value removes the header
    const res = await h.call("PATCH", `${V1}/app/${appId}/endpoint/${epId}/headers`, {
      headers: { "X-New": null, authorization: "***" },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(204);
    got = await svix.endpoint.getHeaders(appId, epId);
    expect(Object.keys(got.headers).sort()).toEqual(["X-Api-Key", "authorization", "x-region"]);
    const { rows } = await h.db.pool.query("select headers from endpoints where id = $1", [epId]);
    expect(rows[0].headers.authorization).toBe("Bearer s3cret-token");
  });

  test("refused like the endpoint body's headers, with stable codes; nothing is changed", async () => {
    const before = await svix.endpoint.getHeaders(appId, epId);
    const cases: [string, () => Promise<unknown>, number, string, RegExp][] = [
      [
        "a header the sender controls",
        () => svix.endpoint.setHeaders(appId, epId, { headers: { Host: "evil.example" } }),
        422,
        "validation_error",
        /Host/,
      ],
      [
        "webhook-* by patch",
        () => svix.endpoint.patchHeaders(appId, epId, { headers: { "webhook-id": "x" } }),
        422,
        "validation_error",
        /webhook-id/,
      ],
      [
        "an invalid name",
        () => svix.endpoint.setHeaders(appId, epId, { headers: { "bad name": "x" } }),
        422,
        "validation_error",
        /bad name/,
      ],
      [
        "a CR LF in a value",
        () => svix.endpoint.patchHeaders(appId, epId, { headers: { "X-A": "a\r\nX-B: b" } }),
        422,
        "validation_error",
        /X-A/,
      ],
      [
        "the mask for a header that is not stored",
        () => svix.endpoint.patchHeaders(appId, epId, { headers: { "X-Secret-Thing": "***" } }),
        422,
        "validation_error",
        /masked value/,
      ],
      [
        "one name twice",
        () => svix.endpoint.setHeaders(appId, epId, { headers: { "X-A": "1", "x-a": "2" } }),
        422,
        "validation_error",
        /same header/,
      ],
    ];
    for (const [name, call, status, code, detail] of cases) {
      const f = await failure(call);
      expect([f.status, f.code], name).toEqual([status, code]);
      expect(f.detail, name).toMatch(detail);
    }
    const noHeaders = await h.call("PUT", `${V1}/app/${appId}/endpoint/${epId}/headers`, {});
    expect([noHeaders.status, noHeaders.body.code]).toEqual([422, "validation_error"]);
    const tooMany = await h.call("PATCH", `${V1}/app/${appId}/endpoint/${epId}/headers`, {
      headers: Object.fromEntries(Array.from({ length: 31 }, (_, i) => [`X-H${i}`, "v"])),
    });
    expect([tooMany.status, tooMany.body.code]).toEqual([422, "validation_error"]);
    expect(await svix.endpoint.getHeaders(appId, epId)).toEqual(before);
    const missing = await failure(svix.endpoint.getHeaders(appId, "ep_nope"));
    expect([missing.status, missing.code]).toEqual([404, "not_found"]);
  });

  test("an app-scoped key reaches its own app's headers only", async () => {
    const otherApp = await newApp(h);
    const { key } = await createApiKey(h.db.pool, { role: "app", appId: otherApp });
    const stranger = new Svix(key, { serverUrl: base });
    for (const call of [
      () => stranger.endpoint.getHeaders(appId, epId),
      () => stranger.endpoint.setHeaders(appId, epId, { headers: {} }),
      () => stranger.endpoint.patchHeaders(appId, epId, { headers: { "X-Evil": "1" } }),
      () => stranger.endpoint.getStats(appId, epId),
    ]) {
      expect((await failure(call)).status).toBe(404);
    }
    const { key: own } = await createApiKey(h.db.pool, { role: "app", appId });
    const owner = new Svix(own, { serverUrl: base });
    expect((await owner.endpoint.getHeaders(appId, epId)).headers["x-region"]).toBe("us");
    expect((await svix.endpoint.getHeaders(appId, epId)).headers["X-Evil"]).toBeUndefined();
  });
});

describe("endpoint stats", () => {
  test("getStats counts the endpoint's deliveries by Svix status, within since/until", async () => {
    const appId = await newApp(h);
    const ep = await newEndpoint(h, appId);
    const other = await newEndpoint(h, appId);
    const old = new Date(Date.now() - 3 * HOUR);
    const future = new Date(Date.now() + HOUR);
    await seed(h.db.pool, [
      { endpointId: ep.id, status: "delivered" },
      { endpointId: ep.id, status: "delivered" },
      { endpointId: ep.id, status: "pending", nextAttemptAt: future },
      { endpointId: ep.id, status: "failed", nextAttemptAt: future },
      { endpointId: ep.id, status: "in_flight" },
      { endpointId: ep.id, status: "dead_letter" },
      { endpointId: ep.id, status: "canceled" },
      { endpointId: ep.id, status: "dead_letter", createdAt: old },
      { endpointId: other.id, status: "delivered" },
    ]);
    expect(await svix.endpoint.getStats(appId, ep.id)).toEqual({
      success: 2,
      pending: 2,
      sending: 1,
      fail: 2,
      canceled: 1,
    });
    const recent = await svix.endpoint.getStats(appId, ep.id, {
      since: new Date(Date.now() - HOUR),
    });
    expect(recent).toEqual({ success: 2, pending: 2, sending: 1, fail: 1, canceled: 1 });
    const before = await svix.endpoint.getStats(appId, ep.id, {
      until: new Date(Date.now() - HOUR),
    });
    expect(before).toEqual({ success: 0, pending: 0, sending: 0, fail: 1, canceled: 0 });
  });

  test("bad windows: until before since is 400 bad_request; a bad date is 422", async () => {
    const appId = await newApp(h);
    const ep = await newEndpoint(h, appId);
    const f = await failure(
      svix.endpoint.getStats(appId, ep.id, {
        since: new Date(Date.now()),
        until: new Date(Date.now() - HOUR),
      }),
    );
    expect([f.status, f.code]).toEqual([400, "bad_request"]);
    const res = await h.call("GET", `${V1}/app/${appId}/endpoint/${ep.id}/stats?since=yesterday`);
    expect([res.status, res.body.code]).toEqual([422, "validation_error"]);
    const missing = await failure(svix.endpoint.getStats(appId, "ep_nope"));
    expect([missing.status, missing.code]).toEqual([404, "not_found"]);
  });
});

describe("health, dashboard access, transformations", () => {
  test("health.get resolves; /api/v1/health needs no key and says what it checked", async () => {
    await expect(svix.health.get()).resolves.toBeUndefined();
    const res = await fetch(`${base}/api/v1/health`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ database: { status: "Ok" }, queue: { status: "Ok" } });
    expect((await fetch(`${base}/api/v1/health/ping`)).status).toBe(204);
    // /healthz is as it was
    expect(await (await fetch(`${base}/healthz`)).json()).toEqual({
      status: "ok",
      database: "reachable",
    });
  });

  test("dashboard-access: the same kind of link as appPortalAccess, in { url, token }", async () => {
    const appId = await newApp(h, `dash-${Date.now().toString(36)}`);
    const res = await fetch(`${base}/api/v1/auth/dashboard-access/${appId}`, {
      method: "POST",
      headers: { authorization: `Bearer ${h.adminKey}` },
    });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { url: string; token: string };
    expect(Object.keys(body).sort()).toEqual(["token", "url"]);
    expect(body.url).toBe(`${base}/portal/#token=${body.token}`);
    const portal = await svix.authentication.appPortalAccess(appId);
    expect(portal.url.replace(portal.token, "T")).toBe(body.url.replace(body.token, "T"));
    // both are live links of the app
    const links = await h.call("GET", `${V1}/auth/app/${appId}/portal-access`);
    expect(links.body.data).toHaveLength(2);

    const { key } = await createApiKey(h.db.pool, { role: "app", appId: await newApp(h) });
    const stranger = await fetch(`${base}/api/v1/auth/dashboard-access/${appId}`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}` },
    });
    expect(stranger.status).toBe(404);
    const unknown = await h.call("POST", `${V1}/auth/dashboard-access/no-such-app`);
    expect([unknown.status, unknown.body.code]).toEqual([404, "not_found"]);
    const junk = await h.call("POST", `${V1}/auth/dashboard-access/${appId}`, { expiry: 5 });
    expect([junk.status, junk.body.code]).toEqual([422, "validation_error"]);
  });

  test("transformations: message transformationsParams is accepted and ignored; the endpoint's transformation answers 400 not_supported", async () => {
    const appId = await newApp(h);
    const ep = await newEndpoint(h, appId);
    const msg = await svix.message.create(appId, {
      eventType: "t.test",
      payload: { kept: true },
      transformationsParams: { rawPayload: '{"replaced":true}', anything: [1, 2] },
    });
    const got = await svix.message.get(appId, msg.id, { withContent: true });
    expect(got.payload).toEqual({ kept: true });

    for (const call of [
      () => svix.endpoint.transformation.get(appId, ep.id),
      () => svix.endpoint.transformation.patch(appId, ep.id, { code: "handler = (x) => x" }),
      () => svix.endpoint.transformationPartialUpdate(appId, ep.id, { enabled: true }),
    ]) {
      const f = await failure(call);
      expect([f.status, f.code]).toEqual([400, "not_supported"]);
      expect(f.detail).toMatch(/no transformations/);
    }
    // an unknown endpoint is still a 404
    const f = await failure(svix.endpoint.transformation.get(appId, "ep_nope"));
    expect([f.status, f.code]).toEqual([404, "not_found"]);
  });
});

describe("message.expungeContent", () => {
  test("the payload is gone, the record kept; waiting deliveries are canceled and nothing of it is sent again", async () => {
    const appId = await newApp(h);
    const ep = await newEndpoint(h, appId, { url: `${rx.url}/expunge-hook` });
    const key = `exp-${Date.now().toString(36)}`;
    const msg = await svix.message.create(
      appId,
      { eventType: "x.secret", payload: { card: "4242", note: "oops" }, eventId: key },
      { idempotencyKey: key },
    );
    const { rows: before } = await h.db.pool.query(
      "select status from deliveries where message_id = $1",
      [msg.id],
    );
    expect(before.map((r) => r.status)).toEqual(["pending"]);

    await expect(svix.message.expungeContent(appId, msg.id)).resolves.toBeUndefined();
    // the message still lists and reads, its payload as Svix shows an expunged one
    const got = await svix.message.get(appId, msg.id, { withContent: true });
    expect(got.payload).toEqual({ expired: true });
    expect(got.eventType).toBe("x.secret");
    const listed = await svix.message.list(appId, { withContent: true });
    expect(listed.data.find((m) => m.id === msg.id)?.payload).toEqual({ expired: true });
    // the idempotency key replays the same message, without the payload
    const again = await svix.message.create(
      appId,
      { eventType: "x.secret", payload: { card: "4242", note: "oops" }, eventId: key },
      { idempotencyKey: key },
    );
    expect(again.id).toBe(msg.id);
    expect(JSON.stringify(again.payload)).not.toContain("4242");
    const { rows } = await h.db.pool.query(
      `select m.payload, m.expunged_at is not null as expunged, d.status, d.last_error_kind
       from messages m join deliveries d on d.message_id = m.id where m.id = $1`,
      [msg.id],
    );
    expect(rows).toEqual([
      { payload: "", expunged: true, status: "canceled", last_error_kind: "expunged" },
    ]);
    const stats = await svix.endpoint.getStats(appId, ep.id);
    expect(stats.canceled).toBe(1);

    // a resend is refused, as in Svix; a repeat expunge is fine
    const resend = await failure(() => svix.messageAttempt.resend(appId, msg.id, ep.id));
    expect([resend.status, resend.code]).toEqual([409, "conflict"]);
    await expect(svix.message.expungeContent(appId, key)).resolves.toBeUndefined();

    // whatever path puts a delivery of it back in the queue, the worker sends nothing: a
    // dead letter of kind expunged. A live message of the same endpoint goes out meanwhile.
    await h.db.pool.query(
      "update deliveries set status = 'pending', next_attempt_at = now() where message_id = $1",
      [msg.id],
    );
    const live = await svix.message.create(appId, { eventType: "x.ok", payload: { ok: 1 } });
    const worker = h.startWorker();
    await waitFor(
      async () =>
        (await h.db.pool.query("select status from deliveries where message_id = $1", [msg.id]))
          .rows[0]?.status === "dead_letter",
      10_000,
      "the expunged delivery's dead letter",
    );
    await waitFor(() => rx.on("/expunge-hook").length === 1, 10_000, "the live delivery");
    await worker.stop();
    expect(rx.on("/expunge-hook").map((r) => r.headers["webhook-id"])).toEqual([live.id]);
    const attempts = await svix.messageAttempt.listByMsg(appId, msg.id);
    expect(attempts.data.map((a) => a.responseStatusCode)).toEqual([0]);
    const { rows: dead } = await h.db.pool.query(
      "select last_error_kind from deliveries where message_id = $1",
      [msg.id],
    );
    expect(dead[0].last_error_kind).toBe("expunged");
    // nothing was sent: no latency sample, no failure counted against the endpoint
    const { rows: samples } = await h.db.pool.query(
      "select ok from latency_samples where endpoint_id = $1",
      [ep.id],
    );
    expect(samples).toEqual([{ ok: true }]);
  });

  test("unknown messages are 404; another app's key cannot expunge", async () => {
    const appId = await newApp(h);
    await newEndpoint(h, appId);
    const msg = await svix.message.create(appId, { eventType: "x", payload: { keep: 1 } });
    const missing = await failure(() => svix.message.expungeContent(appId, "msg_nope"));
    expect([missing.status, missing.code]).toEqual([404, "not_found"]);
    const { key } = await createApiKey(h.db.pool, { role: "app", appId: await newApp(h) });
    const stranger = new Svix(key, { serverUrl: base });
    expect((await failure(() => stranger.message.expungeContent(appId, msg.id))).status).toBe(404);
    const got = await svix.message.get(appId, msg.id, { withContent: true });
    expect(got.payload).toEqual({ keep: 1 });
  });
});
