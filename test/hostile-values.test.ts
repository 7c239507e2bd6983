/**
 * Hostile values aimed at the fields and parameters they used to break (docs/security.md,
 * "Input"): prototype-pollution keys, huge and infinite numbers, NUL and lone surrogates,
 * JSON nested 10k-100k levels deep, dates at the edge of what JavaScript and PostgreSQL
 * take. Each is a 4xx with `{ code, detail }` outside the message payload, and is kept
 * exactly as sent inside it; never a 5xx.
 *
 * Real PostgreSQL (one cloned database); the API through inject().
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type Fixtures, realValues, seedFixtures } from "./helpers/fuzz-fixtures.ts";
import { type Harness, startHarness } from "./helpers/harness.ts";
import { POLLUTION_BODIES } from "./helpers/junk-bodies.ts";
import { expectRefusal, REFUSAL } from "./helpers/refusals.ts";
import { discoverRoutes, type Route } from "./helpers/routes.ts";

const V1 = "/api/v1";

let h: Harness;
let fx: Fixtures;
let routes: Route[] = [];

beforeAll(async () => {
  h = await startHarness();
  await h.api.ready();
  routes = discoverRoutes(h.api);
  expect(routes.length).toBeGreaterThan(50);
  fx = await seedFixtures(h);
});
afterAll(async () => {
  await h?.close();
});

describe("targeted junk", () => {
  test("prototype-pollution keys are refused outside the payload and kept as data inside it", async () => {
    for (const body of POLLUTION_BODIES.slice(0, 3)) {
      expectRefusal(await h.call("POST", `${V1}/app`, body), REFUSAL.invalidJson, body);
    }
    expect(({} as Record<string, unknown>).hrPolluted).toBeUndefined();
  });

  test("huge numbers, NUL and lone surrogates in fields: 4xx; in the payload: stored exactly", async () => {
    for (const limit of [
      "99999999999999999999",
      "-1",
      "1.5",
      "250.0000000000001",
      "1e3",
      "2e2.5",
    ]) {
      const res = await h.call("GET", `${V1}/app?limit=${limit}`);
      expect(res.status, limit).toBeGreaterThanOrEqual(400);
      expect(res.status, limit).toBeLessThan(500);
    }
    for (const name of ['"a\\u0000b"', "1e999999", '"\\ud800"']) {
      const res = await h.call("POST", `${V1}/app`, `{"name":${name}}`);
      expect(res.status, name).toBeLessThan(500);
    }
    expect((await h.call("POST", `${V1}/app`, '{"name":"a\\u0000b"}')).status).toBe(
      REFUSAL.badRequest.status,
    );
    // infinite numbers in bodies fail the (non-coercing) schema
    const ep = `${V1}/app/${fx.appId}/endpoint/${fx.endpointId}`;
    for (const [url, body] of [
      [`${V1}/app`, '{"name":"x","rateLimit":1e999}'],
      [`${ep}/secret/rotate`, '{"gracePeriodSeconds":1e999}'],
      [`${ep}/secret/rotate`, '{"gracePeriodSeconds":-1e999}'],
      [`${V1}/app/${fx.appId}/endpoint`, '{"url":"http://127.0.0.1:9/","maxAttempts":1e999}'],
    ] as const) {
      expect((await h.call("POST", url, body)).status, body).toBe(REFUSAL.schema.status);
    }
    const payload =
      '{"n":123456789012345678901234567890,"e":1e999,"z":"\\u0000","s":"\\ud800","k":-0}';
    const sent = await h.call(
      "POST",
      `${V1}/app/${fx.appId}/msg`,
      `{"eventType":"raw","payload":${payload}}`,
    );
    expect(sent.status).toBe(202);
    const { rows } = await h.db.pool.query("select payload from messages where id = $1", [
      sent.body.id,
    ]);
    expect(rows[0].payload).toBe(payload);
  });

  // Regression (fixed in bddc362): the NUL check walked the parsed body recursively, so a
  // body nested ~3k levels deep outside the payload (~100k once V8 had optimized the walk)
  // overflowed the stack: RangeError → 500. Now an iterative walk refuses depth > 64.
  // (about 150 bodies of up to 200 kB parsed: past the default 60 s on a loaded machine)
  test("deep JSON (10k-100k levels) outside the payload is a 4xx on every route that takes a body", {
    timeout: 240_000,
  }, async () => {
    const deep = (n: number) => `${"[".repeat(n)}${"]".repeat(n)}`;
    const bodies = [
      `{"name":${deep(10_000)}}`,
      `{"eventType":"x","payload":{},"tags":${deep(10_000)}}`,
      deep(10_000),
      // once V8 has optimized the walk 10k levels may fit on the stack; 100k never do
      `{"name":${deep(100_000)}}`,
      deep(100_000),
    ];
    const writes = routes.filter((r) => ["POST", "PUT", "PATCH"].includes(r.method));
    expect(writes.length).toBeGreaterThan(10);
    const failures: string[] = [];
    for (const r of writes) {
      const url = r.path.replace(/:(\w+)/g, (_, p: string) =>
        encodeURIComponent(realValues(fx, p)[0]!),
      );
      for (const body of bodies) {
        const res = await h.api.inject({
          method: r.method as "POST",
          url,
          headers: { authorization: `Bearer ${h.adminKey}`, "content-type": "application/json" },
          payload: body,
        });
        if (res.statusCode < 400 || res.statusCode >= 500)
          failures.push(`${r.method} ${r.path} → ${res.statusCode}`);
      }
    }
    expect(failures).toEqual([]);
  });
});

// =======================================================================================

// Regression (fixed in bddc362): dates that pass the date-time format but not PostgreSQL
// or JavaScript answered 500: year 0000 and offsets beyond ±15:59 in ?before=/?after= (the
// raw string went to SQL), a leap second (23:59:60Z) in deliverAt, requeue `since` and
// dead-letter since/until (Invalid Date). Now parsed once, years 1-9999, 400 otherwise.
test("edge dates in query strings and bodies are a 4xx, not a 500", async () => {
  const failures: string[] = [];
  const check = async (method: string, url: string, body?: unknown) => {
    const res = await h.call(method, url, body);
    if (res.status >= 500)
      failures.push(
        `${method} ${decodeURIComponent(url)} ${body ? JSON.stringify(body) : ""} → ${res.status}`,
      );
  };
  for (const d of [
    "0000-01-01T00:00:00Z",
    "0001-01-01T00:00:00Z",
    "9999-12-31T23:59:59Z",
    "2016-12-31T23:59:60Z",
    "2024-01-01T00:00:00-23:59",
    "2024-02-29T00:00:00Z",
  ]) {
    const q = encodeURIComponent(d);
    await check("GET", `${V1}/app/${fx.appId}/msg?before=${q}`);
    await check("GET", `${V1}/app/${fx.appId}/msg?after=${q}`);
    await check("GET", `${V1}/app/${fx.appId}/endpoint/${fx.endpointId}/msg?before=${q}`);
    await check("GET", `${V1}/app/${fx.appId}/endpoint/${fx.endpointId}/msg?after=${q}`);
    await check("GET", `${V1}/dead-letters?since=${q}`);
    await check("GET", `${V1}/dead-letters?until=${q}`);
    await check("GET", `${V1}/dead-letters/analysis?since=${q}`);
    await check("POST", `${V1}/app/${fx.appId}/msg`, {
      eventType: "when",
      payload: {},
      deliverAt: d,
    });
    await check("POST", `${V1}/dead-letters/requeue`, { since: d });
  }
  expect(failures).toEqual([]);
});

// Regression (fixed in bddc362; found by the property test above): a lone surrogate in
// `metadata` (jsonb) made PostgreSQL refuse the JSON.stringify'd \ud800 escape: 500. Now
// strings outside the payload must be well-formed UTF-16 (400).
test("lone surrogates in metadata (a jsonb column) are a 4xx, not a 500", async () => {
  const ep = `${V1}/app/${fx.appId}/endpoint`;
  const cases: [string, string, string][] = [
    ["POST", `${V1}/app`, '{"name":"x","metadata":{"k":"\\ud800"}}'],
    ["POST", `${V1}/app`, '{"name":"x","metadata":{"\\udfff":"v"}}'],
    ["PATCH", `${V1}/app/${fx.appId}`, '{"metadata":{"k":"a\\udc00b"}}'],
    ["POST", ep, '{"url":"http://127.0.0.1:9/x","metadata":{"k":"\\ud800"}}'],
    ["PATCH", `${ep}/${fx.endpointId}`, '{"metadata":{"k":"\\ud800"}}'],
  ];
  const failures: string[] = [];
  for (const [method, url, body] of cases) {
    const res = await h.call(method, url, body);
    if (res.status !== REFUSAL.badRequest.status)
      failures.push(`${method} ${url} ${body} → ${res.status}`);
  }
  expect(failures).toEqual([]);
});

// Regression (fixed in bddc362): the coercing Ajv turned "1e999"/"-1e400"/"Infinity" into
// ±Infinity and then skipped minimum/maximum, so ?limit=1e999 reached SQL as
// `limit 'Infinity'::integer`: 500 on every listing (and /dead-letters?status_code=).
test("infinite numbers in query strings are a 4xx on every listing", async () => {
  const failures: string[] = [];
  let refused = 0;
  for (const r of routes.filter((x) => x.method === "GET" && x.path.startsWith(V1))) {
    const path = r.path.replace(/:(\w+)/g, (_, p: string) =>
      encodeURIComponent(realValues(fx, p)[0]!),
    );
    for (const q of ["limit=1e999", "limit=-1e400", "limit=Infinity", "status_code=1e999"]) {
      const res = await h.api.inject({
        method: "GET",
        url: `${path}?${q}`,
        headers: { authorization: `Bearer ${h.adminKey}` },
      });
      if (res.statusCode >= 500) failures.push(`GET ${r.path}?${q} → ${res.statusCode}`);
      if (res.statusCode >= 400) refused++;
    }
  }
  expect(failures).toEqual([]);
  // every listing declares limit; the routes without it ignore the parameter
  expect(refused).toBeGreaterThan(25);
});
