/**
 * API keys (docs/security.md): the key format and its checksum, keys shown
 * once and stored hashed, admin and app-scoped keys, revocation at once, uniform failed-auth
 * answers that cost no database work for junk, and the per-key request rate limit.
 *
 * Real PostgreSQL (one cloned database), the API through inject(). A pool wrapper counts
 * the authentication lookups, to prove that malformed keys never reach the database.
 */
import { createHash, randomBytes } from "node:crypto";
import fc from "fast-check";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { loadConfig } from "../src/config.ts";
import type { Pool } from "../src/db/pool.ts";
import { silentLogger } from "../src/logger.ts";
import { checkApiKey, generateApiKey } from "../src/security/api-key-format.ts";
import {
  buildTestApi,
  type CallResult,
  type Harness,
  startHarness,
  testConfig,
} from "./helpers/harness.ts";

const V1 = "/api/v1";
const KEY_SHAPE = /^hr_(admin|app)_[0-9A-Za-z]{38}$/;
const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

let h: Harness;
/** The API under test, built on a pool that counts authentication lookups. */
let api: FastifyInstance;
let authLookups = 0;
let appA: { id: string; uid: string };

/** A pool that counts the queries that look a key up. */
function countingPool(pool: Pool): Pool {
  return new Proxy(pool, {
    get(target, prop) {
      if (prop === "query") {
        return (...args: Parameters<Pool["query"]>) => {
          const q = args[0] as unknown;
          const text = typeof q === "string" ? q : ((q as { text?: string })?.text ?? "");
          if (/from api_keys/i.test(text) && /key_hash/i.test(text)) authLookups++;
          return (target.query as (...a: unknown[]) => unknown)(...args);
        };
      }
      const value = Reflect.get(target, prop, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

async function req(
  method: string,
  url: string,
  options: {
    key?: string | null;
    authorization?: string;
    body?: unknown;
    headers?: Record<string, string>;
    app?: FastifyInstance;
  } = {},
) {
  const authorization =
    options.authorization ??
    (options.key === null ? undefined : `Bearer ${options.key ?? h.adminKey}`);
  const res = await (options.app ?? api).inject({
    method: method as "GET",
    url,
    headers: {
      ...(authorization !== undefined && { authorization }),
      ...(options.body !== undefined && { "content-type": "application/json" }),
      ...options.headers,
    },
    payload: options.body === undefined ? undefined : JSON.stringify(options.body),
  });
  let body: CallResult["body"] = res.body;
  try {
    body = res.body ? JSON.parse(res.body) : null;
  } catch {}
  return { status: res.statusCode, body, text: res.body, headers: res.headers };
}

const sha256 = (s: string) => createHash("sha256").update(s).digest("hex");

async function createKey(body: Record<string, unknown>) {
  const res = await req("POST", `${V1}/api-keys`, { body });
  expect(res.status, res.text).toBe(201);
  return res.body as { id: string; key: string; role: string; appId: string | null; name: string };
}

beforeAll(async () => {
  h = await startHarness();
  api = await buildTestApi({
    pool: countingPool(h.db.pool),
    config: h.config,
    logger: silentLogger,
  });
  const uid = `keys-a-${randomBytes(3).toString("hex")}`;
  const app = await req("POST", `${V1}/app`, { body: { name: "key tenant", uid } });
  appA = { id: app.body.id, uid };
});
afterAll(async () => {
  await api?.close();
  await h?.close();
});

describe("creating and listing keys", () => {
  test("admin and app keys: prefixed, checksummed, shown once, stored as a hash only", async () => {
    const admin = await createKey({ role: "admin", name: "ops" });
    expect(admin).toMatchObject({ role: "admin", appId: null, name: "ops", revokedAt: null });
    expect(admin.id).toMatch(/^key_/);
    expect(admin.key).toMatch(KEY_SHAPE);
    expect(admin.key.startsWith("hr_admin_")).toBe(true);
    expect(checkApiKey(admin.key)).toBe("admin");

    const app = await createKey({ role: "app", appId: appA.uid, name: "tenant" });
    expect(app).toMatchObject({ role: "app", appId: appA.id, name: "tenant" });
    expect(app.key.startsWith("hr_app_")).toBe(true);
    expect(checkApiKey(app.key)).toBe("app");

    // both work
    expect((await req("GET", `${V1}/api-keys`, { key: admin.key })).status).toBe(200);
    expect((await req("GET", `${V1}/app/${appA.id}`, { key: app.key })).status).toBe(200);

    // the listing never holds a key or its hash, in any field
    for (const url of [`${V1}/api-keys`, `${V1}/api-keys?app_id=${appA.uid}`]) {
      const list = await req("GET", url);
      expect(list.status).toBe(200);
      for (const k of [admin, app]) {
        expect(list.text).not.toContain(k.key);
        expect(list.text).not.toContain(k.key.slice(-38));
        expect(list.text).not.toContain(sha256(k.key));
      }
      for (const entry of list.body.data) {
        expect(Object.keys(entry).sort()).toEqual([
          "appId",
          "createdAt",
          "id",
          "name",
          "revokedAt",
          "role",
        ]);
      }
    }
    const scoped = await req("GET", `${V1}/api-keys?app_id=${appA.id}`);
    expect(scoped.body.data.map((k: { id: string }) => k.id)).toEqual([app.id]);

    // the database holds the SHA-256 only
    const { rows } = await h.db.pool.query(
      "select row_to_json(k)::text as row, key_hash from api_keys k where id = any($1)",
      [[admin.id, app.id]],
    );
    for (const r of rows) {
      for (const k of [admin, app]) expect(r.row).not.toContain(k.key.slice(-38));
    }
    expect(rows.map((r: { key_hash: string }) => r.key_hash).sort()).toEqual(
      [sha256(admin.key), sha256(app.key)].sort(),
    );
  });

  test("creation is validated", async () => {
    const cases: [unknown, number][] = [
      [{ role: "app" }, 400],
      [{ role: "admin", appId: appA.id }, 400],
      [{ role: "app", appId: "no-such-app" }, 404],
      [{ role: "root" }, 422],
      [{ role: "admin", key: "hr_admin_choose_my_own_key" }, 422],
      [{ role: "admin", name: "x".repeat(257) }, 422],
      [{}, 422],
    ];
    for (const [body, status] of cases) {
      expect((await req("POST", `${V1}/api-keys`, { body })).status, JSON.stringify(body)).toBe(
        status,
      );
    }
  });

  test("an app key uses its own app's routes, and manages no keys or apps", async () => {
    const { key } = await createKey({ role: "app", appId: appA.id });
    const as = (method: string, url: string, body?: unknown) => req(method, url, { key, body });
    expect((await as("GET", `${V1}/app/${appA.id}`)).status).toBe(200);
    expect((await as("GET", `${V1}/app/${appA.uid}`)).status).toBe(200);
    expect(
      (await as("PATCH", `${V1}/app/${appA.id}`, { metadata: { by: "app key" } })).status,
    ).toBe(200);
    const ep = await as("POST", `${V1}/app/${appA.id}/endpoint`, {
      url: "http://127.0.0.1:9/hook",
    });
    expect(ep.status).toBe(201);
    expect((await as("GET", `${V1}/app/${appA.id}/endpoint/${ep.body.id}/secret`)).status).toBe(
      200,
    );
    expect(
      (await as("POST", `${V1}/app/${appA.id}/msg`, { eventType: "k.t", payload: { a: 1 } }))
        .status,
    ).toBe(202);
    expect((await as("GET", `${V1}/app/${appA.id}/msg`)).status).toBe(200);
    expect((await as("GET", `${V1}/health/summary`)).status).toBe(200);
    expect((await as("GET", `${V1}/app`)).body.data.map((a: { id: string }) => a.id)).toEqual([
      appA.id,
    ]);
    expect((await as("POST", `${V1}/app`, { name: "nope" })).status).toBe(403);
    expect((await as("POST", `${V1}/api-keys`, { role: "app", appId: appA.id })).status).toBe(403);
    expect((await as("POST", `${V1}/api-keys`, { role: "admin" })).status).toBe(403);
    expect((await as("GET", `${V1}/api-keys`)).status).toBe(403);
  });
});

describe("the checksum catches typos before any database lookup", () => {
  test("a valid key costs exactly one lookup; junk and typos cost none and answer 401", async () => {
    const { key } = await createKey({ role: "admin" });
    authLookups = 0;
    expect((await req("GET", `${V1}/app`, { key })).status).toBe(200);
    expect(authLookups).toBe(1);

    const alphabet = `${BASE62}_-.~+/=`;
    const typo = fc.oneof(
      // substitute one character
      fc
        .record({ at: fc.nat(key.length - 1), c: fc.constantFrom(...alphabet) })
        .map(({ at, c }) => key.slice(0, at) + c + key.slice(at + 1)),
      // swap two neighbours
      fc
        .nat(key.length - 2)
        .map((at) => key.slice(0, at) + key[at + 1] + key[at] + key.slice(at + 2)),
      // drop or double one character
      fc.nat(key.length - 1).map((at) => key.slice(0, at) + key.slice(at + 1)),
      fc.nat(key.length - 1).map((at) => key.slice(0, at + 1) + key.slice(at)),
      // change the case of one letter
      fc.nat(key.length - 1).map((at) => {
        const ch = key[at]!;
        const flipped = ch === ch.toUpperCase() ? ch.toLowerCase() : ch.toUpperCase();
        return key.slice(0, at) + flipped + key.slice(at + 1);
      }),
    );
    await fc.assert(
      fc.asyncProperty(typo, async (bad) => {
        if (bad === key) return;
        expect(checkApiKey(bad)).toBeNull();
        authLookups = 0;
        const res = await req("GET", `${V1}/app`, { key: bad });
        expect(res.status).toBe(401);
        expect(authLookups).toBe(0);
      }),
      { numRuns: 150 },
    );

    // an admin key relabelled as an app key (and back) is caught the same way
    const relabelled = key.replace(/^hr_admin_/, "hr_app_");
    expect(checkApiKey(relabelled)).toBeNull();
  });

  test("every generated key passes its own check; keys are unique", () => {
    const seen = new Set<string>();
    for (let i = 0; i < 2_000; i++) {
      const k = generateApiKey(i % 2 ? "admin" : "app");
      expect(k).toMatch(KEY_SHAPE);
      expect(checkApiKey(k)).toBe(i % 2 ? "admin" : "app");
      seen.add(k);
    }
    expect(seen.size).toBe(2_000);
  });
});

describe("revocation and failed authentication", () => {
  test("revocation takes effect on the very next request, admin and app keys alike", async () => {
    for (const body of [{ role: "admin" }, { role: "app", appId: appA.id }]) {
      const k = await createKey(body);
      expect((await req("GET", `${V1}/app/${appA.id}`, { key: k.key })).status).toBe(200);
      expect((await req("DELETE", `${V1}/api-keys/${k.id}`)).status).toBe(204);
      expect((await req("GET", `${V1}/app/${appA.id}`, { key: k.key })).status).toBe(401);
      // and through a second API process on the same database (nothing is cached per process)
      expect((await req("GET", `${V1}/app/${appA.id}`, { key: k.key, app: h.api })).status).toBe(
        401,
      );
      // revoking again is harmless; the listing says when
      expect((await req("DELETE", `${V1}/api-keys/${k.id}`)).status).toBe(204);
      const list = await req("GET", `${V1}/api-keys`);
      const entry = list.body.data.find((e: { id: string }) => e.id === k.id);
      expect(Date.parse(entry.revokedAt)).not.toBeNaN();
    }
    expect((await req("DELETE", `${V1}/api-keys/key_doesnotexist`)).status).toBe(404);
  });

  test("a key revoked while requests race with it: every request after the revocation is 401", async () => {
    const k = await createKey({ role: "admin" });
    const burst = () =>
      Promise.all(Array.from({ length: 20 }, () => req("GET", `${V1}/app`, { key: k.key })));
    expect((await burst()).every((r) => r.status === 200)).toBe(true);
    const revoked = req("DELETE", `${V1}/api-keys/${k.id}`);
    await burst();
    expect((await revoked).status).toBe(204);
    expect((await burst()).every((r) => r.status === 401)).toBe(true);
  });

  test("deleting an app deletes its keys: they answer 401, not 404", async () => {
    const app = await req("POST", `${V1}/app`, { body: { name: "short-lived" } });
    const k = await createKey({ role: "app", appId: app.body.id });
    expect((await req("GET", `${V1}/app/${app.body.id}`, { key: k.key })).status).toBe(200);
    expect((await req("DELETE", `${V1}/app/${app.body.id}`)).status).toBe(204);
    expect((await req("GET", `${V1}/app/${app.body.id}`, { key: k.key })).status).toBe(401);
  });

  test("missing, malformed, bad-checksum, unknown and revoked keys all get the same answer", async () => {
    const revoked = await createKey({ role: "admin" });
    await req("DELETE", `${V1}/api-keys/${revoked.id}`);
    const good = (await createKey({ role: "admin" })).key;
    const badChecksum = good.slice(0, -1) + (good.endsWith("A") ? "B" : "A");
    const variants: [string, string | undefined][] = [
      ["no header", undefined],
      ["empty header", ""],
      ["scheme only", "Bearer"],
      ["scheme and space", "Bearer "],
      ["basic auth", `Basic ${Buffer.from("admin:admin").toString("base64")}`],
      ["other scheme", `Token ${good}`],
      ["two tokens", `Bearer ${good} ${good}`],
      ["too short", "Bearer hr_admin_abc"],
      ["too long", `Bearer ${"hr_admin_".padEnd(400, "a")}`],
      ["bad checksum", `Bearer ${badChecksum}`],
      ["unknown key", `Bearer ${generateApiKey("admin")}`],
      ["unknown app key", `Bearer ${generateApiKey("app")}`],
      ["revoked key", `Bearer ${revoked.key}`],
      ["sha256 of a key", `Bearer ${sha256(good)}`],
      ["sql", "Bearer ' or '1'='1"],
      ["unicode", "Bearer hr_admin_ÄÖÜ"],
    ];
    // existing and missing resources, reads and writes, and a body that would not even parse
    const targets: [string, string, string?][] = [
      ["GET", `${V1}/app`],
      ["GET", `${V1}/app/${appA.id}`],
      ["GET", `${V1}/app/no-such-app`],
      ["DELETE", `${V1}/app/${appA.id}`],
      ["POST", `${V1}/app/${appA.id}/msg`, '{"eventType":"x","payload":{}}'],
      ["POST", `${V1}/app/${appA.id}/msg`, "{not json"],
      ["GET", `${V1}/api-keys`],
      ["GET", `${V1}/dead-letters`],
    ];
    let reference: { status: number; body: string; headers: string } | null = null;
    for (const [name, authorization] of variants) {
      for (const [method, url, payload] of targets) {
        const res = await api.inject({
          method: method as "GET",
          url,
          headers: {
            ...(authorization !== undefined && { authorization }),
            ...(payload !== undefined && { "content-type": "application/json" }),
          },
          payload,
        });
        const { date: _date, ...headers } = res.headers;
        const seen = { status: res.statusCode, body: res.body, headers: JSON.stringify(headers) };
        reference ??= seen;
        expect(seen, `${name}: ${method} ${url}`).toEqual(reference);
      }
    }
    expect(reference?.status).toBe(401);
    expect(JSON.parse(reference!.body)).toEqual({
      code: "unauthorized",
      detail: expect.any(String),
    });
    // the app is still there: the unauthenticated DELETE did nothing
    expect((await req("GET", `${V1}/app/${appA.id}`)).status).toBe(200);
  });

  test("junk keys cost no database work and no deliberate delay", async () => {
    authLookups = 0;
    const t0 = performance.now();
    const junk = Array.from({ length: 300 }, (_, i) =>
      i % 3 === 0
        ? `hr_admin_${randomBytes(19).toString("hex")}`
        : i % 3 === 1
          ? randomBytes(30).toString("base64")
          : `hr_app_${"x".repeat(i)}`,
    );
    const results = await Promise.all(junk.map((k) => req("GET", `${V1}/app`, { key: k })));
    const ms = performance.now() - t0;
    expect(results.every((r) => r.status === 401)).toBe(true);
    expect(authLookups).toBe(0);
    // and the next good request goes through at once after them
    expect((await req("GET", `${V1}/app`)).status).toBe(200);
    console.log(`300 junk keys answered 401 in ${ms.toFixed(0)} ms`);
  });
});

describe("per-key request rate limit", () => {
  test("configured from HOOKRELAY_API_RATE_LIMIT", () => {
    expect(loadConfig({ HOOKRELAY_API_RATE_LIMIT: "5" }).apiRateLimitPerSecond).toBe(5);
    expect(loadConfig({ HOOKRELAY_API_RATE_LIMIT: "0" }).apiRateLimitPerSecond).toBe(0);
    expect(loadConfig({}).apiRateLimitPerSecond).toBeGreaterThan(0);
    for (const bad of ["-1", "1.5", "lots"]) {
      expect(() => loadConfig({ HOOKRELAY_API_RATE_LIMIT: bad }), bad).toThrow(
        /HOOKRELAY_API_RATE_LIMIT/,
      );
    }
  });

  test("beyond the limit: 429 with Retry-After for that key only", async () => {
    const limited = await buildTestApi({
      pool: h.db.pool,
      config: testConfig({ databaseUrl: h.db.url, apiRateLimitPerSecond: 5 }),
      logger: silentLogger,
    });
    try {
      const noisy = (await createKey({ role: "admin" })).key;
      const quiet = (await createKey({ role: "app", appId: appA.id })).key;
      // 30 at once: the burst (2 s of the rate = 10) passes, the rest is refused, however
      // slow the machine (sequential requests on a loaded one could keep pace with the refill)
      const burst = await Promise.all(
        Array.from({ length: 30 }, () => req("GET", `${V1}/app`, { key: noisy, app: limited })),
      );
      const passed = burst.filter((r) => r.status === 200).length;
      const limitedRes = burst.find((r) => r.status === 429) ?? null;
      expect(burst.every((r) => r.status === 200 || r.status === 429)).toBe(true);
      expect(limitedRes, "no 429 among 30 simultaneous requests at 5/s").not.toBeNull();
      expect(passed).toBeGreaterThanOrEqual(10);
      expect(limitedRes!.body).toEqual({ code: "rate_limited", detail: expect.any(String) });
      const retryAfter = Number(limitedRes!.headers["retry-after"]);
      expect(Number.isInteger(retryAfter)).toBe(true);
      expect(retryAfter).toBeGreaterThanOrEqual(1);
      expect(retryAfter).toBeLessThanOrEqual(2);

      // still limited, on every route (a few may pass as tokens refill); another key is not
      const again = await Promise.all(
        Array.from({ length: 10 }, () =>
          req("POST", `${V1}/app`, { key: noisy, app: limited, body: { name: "x" } }),
        ),
      );
      expect(again.filter((r) => r.status === 429).length).toBeGreaterThan(0);
      expect((await req("GET", `${V1}/app/${appA.id}`, { key: quiet, app: limited })).status).toBe(
        200,
      );
      // the limit is per key and per process: the other API instance serves the noisy key
      expect((await req("GET", `${V1}/app`, { key: noisy, app: api })).status).toBe(200);
      // failed authentication is answered before the limiter: 401, not 429
      expect(
        (await req("GET", `${V1}/app`, { key: generateApiKey("admin"), app: limited })).status,
      ).toBe(401);
      // that the key gets through again once Retry-After has passed is the limiter's clock:
      // src/api/key-rate-limit.test.ts moves it instead of waiting here
    } finally {
      await limited.close();
    }
  });

  test("0 turns the limit off", async () => {
    const unlimited = await buildTestApi({
      pool: h.db.pool,
      config: testConfig({ databaseUrl: h.db.url, apiRateLimitPerSecond: 0 }),
      logger: silentLogger,
    });
    try {
      const statuses: number[] = [];
      for (let i = 0; i < 60; i++)
        statuses.push((await req("GET", `${V1}/app`, { app: unlimited })).status);
      expect(statuses.every((s) => s === 200)).toBe(true);
    } finally {
      await unlimited.close();
    }
  });
});
