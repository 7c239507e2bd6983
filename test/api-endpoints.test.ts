/**
 * Endpoints through the management API (/api/v1/app/{appId}/endpoint): every field on
 * create, the older filterTypes name, get by id or uid and pagination, PATCH and PUT (and
 * PUT creating by uid), DELETE, signing secrets (generated, supplied, refused, rotated),
 * custom headers reaching the receiver, and 404s for unknown apps and endpoints.
 *
 * The management API through app.inject, on a real PostgreSQL (one cloned database for this
 * file). Deliveries go to one real HTTP receiver on 127.0.0.1; the tests that need them
 * start a worker and stop it again when done.
 *
 * Tests named "regression ..." pin defects found in review and fixed.
 */
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import {
  apiCalls,
  expectClientError,
  isoDate,
  newSecret,
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

const { raw, createApp, createEndpoint, sendMessage } = apiCalls(() => ({ h, rx }));

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
    expect(Object.keys(s1.body)).toEqual(["key", "publicKey", "signatureScheme"]);
    expect(s1.body).toMatchObject({ publicKey: null, signatureScheme: "v1" });
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
