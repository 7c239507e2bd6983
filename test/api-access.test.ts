/**
 * Who may call what: the unauthenticated routes (/healthz, the OpenAPI document at
 * /docs/json) answer without a key; an app-scoped key sees its own app only, and every
 * route naming another app's application, endpoint, message or attempt answers 404
 * (test/tenant-isolation.test.ts probes every route this way).
 *
 * The management API through app.inject, on a real PostgreSQL (one cloned database for this
 * file). Deliveries go to one real HTTP receiver on 127.0.0.1; the tests that need them
 * start a worker and stop it again when done.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createApiKey } from "../src/api/auth.ts";
import { apiCalls, unique, V1 } from "./helpers/api-calls.ts";
import { type Harness, startHarness } from "./helpers/harness.ts";
import { type Receiver, startReceiver } from "./helpers/receiver.ts";

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

const { createApp, createEndpoint, sendMessage } = apiCalls(() => ({ h, rx }));

describe("unauthenticated routes", () => {
  test("GET /healthz is 200 without auth", async () => {
    const res = await h.api.inject({ method: "GET", url: "/healthz" });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ status: "ok", database: "reachable" });
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
