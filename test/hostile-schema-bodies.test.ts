/**
 * Bodies generated from each route's own JSON schema (docs/security.md, "Input"; the
 * generator is test/helpers/schema-arbitrary.ts). A body its schema accepts is answered 2xx
 * or with one of the refusals of checks the schema cannot express (a bad URL, an unknown
 * id, a uid taken), never a 5xx and never a schema error. A body wrong in one way is a 422
 * `validation_error` whose detail names the field, and nothing is written (docs/errors.md).
 *
 * Real PostgreSQL (one cloned database); the API through inject(), aimed at real fixtures.
 */
import fc from "fast-check";
import { afterAll, beforeAll, expect, test } from "vitest";
import { type Fixtures, realPath, seedFixtures, withFixtures } from "./helpers/fuzz-fixtures.ts";
import { type CallResult, type Harness, startHarness } from "./helpers/harness.ts";
import {
  expectRefusal,
  isOneOf,
  isSchemaRefusal,
  REFUSAL,
  REFUSALS_OF_VALID_BODIES,
} from "./helpers/refusals.ts";
import { BODY_HINTS, FUZZ_EGRESS, routeBodySchemas } from "./helpers/route-bodies.ts";
import { type Invalid, invalidValue, validValue } from "./helpers/schema-arbitrary.ts";

interface BodyRoute {
  key: string;
  method: string;
  path: string;
  valid: fc.Arbitrary<unknown>;
  invalid: fc.Arbitrary<Invalid>;
}

let h: Harness;
let fx: Fixtures;
let routes: BodyRoute[] = [];

beforeAll(async () => {
  // one egress pool, so that a body naming it can be taken (route-bodies.ts)
  h = await startHarness({ egress: FUZZ_EGRESS });
  fx = await seedFixtures(h);
  const schemas = await routeBodySchemas(h.db.pool);
  routes = [...schemas].map(([key, schema]) => {
    const [method, path] = key.split(" ") as [string, string];
    const options = { hints: BODY_HINTS };
    return {
      key,
      method,
      path,
      valid: validValue(schema, options),
      invalid: invalidValue(schema, options),
    };
  });
  expect(routes.length).toBeGreaterThan(12);
});
afterAll(async () => {
  await h?.close();
});

/**
 * Each property sends a few hundred requests (the first up to a thousand more per route no
 * body was taken by): past the default 60 s on a loaded machine (a full run at load 15 took
 * 64 s), and a test that times out keeps sending in the background, which changed the next
 * test's footprint of the database: so both get as long as test/hostile-junk.test.ts's.
 */
const LOADED_TIMEOUT_MS = 240_000;

/** Routes are drawn by key, so that a counterexample names its route and nothing more. */
const routeKey = () => fc.constantFrom(...routes.map((r) => r.key));
const byKey = (key: string) => routes.find((r) => r.key === key)!;

/** `body` to the route, its path aimed at the fixtures, the admin key. */
const send = (route: BodyRoute, body: unknown) =>
  h.call(route.method, realPath(fx, route.path), withFixtures(JSON.stringify(body), fx));

const describeExchange = (route: BodyRoute, body: unknown, res: CallResult) =>
  `${route.key} ${JSON.stringify(body).slice(0, 400)} → ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`;

/** Everything a refused request could have written, in one row. */
async function footprint() {
  const { rows } = await h.db.pool.query(
    `select (select count(*)::int from applications) as apps,
            (select max(updated_at) from applications) as apps_changed,
            (select count(*)::int from endpoints) as endpoints,
            (select max(updated_at) from endpoints) as endpoints_changed,
            (select md5(string_agg(secret || coalesce(expires_at::text, ''), ',' order by id))
               from endpoint_secrets) as secrets,
            (select count(*)::int from messages) as messages,
            (select count(*)::int from deliveries) as deliveries,
            (select max(updated_at) from deliveries) as deliveries_changed,
            (select count(*)::int from api_keys) as keys,
            (select count(*)::int from event_types) as event_types,
            (select max(updated_at) from event_types) as event_types_changed`,
  );
  return rows[0];
}

/** What the detail of a refused body must name: the property, or the place (body/x/y). */
const named = (inv: Invalid) =>
  inv.keyword === "required"
    ? `'${inv.property}'`
    : inv.keyword === "additionalProperties"
      ? `"${inv.property}"`
      : `body${inv.at}`;

test("valid bodies on every route with a body schema: a 2xx or a documented refusal, never a 5xx or a schema error", {
  timeout: LOADED_TIMEOUT_MS,
}, async () => {
  const accepted = new Set<string>();
  /** Sends one valid body; true when it was accepted. */
  const check = async (route: BodyRoute, body: unknown): Promise<boolean> => {
    const res = await send(route, body);
    if (res.status >= 200 && res.status < 300) {
      accepted.add(route.key);
      return true;
    }
    const what = describeExchange(route, body, res);
    expect(isOneOf(res, REFUSALS_OF_VALID_BODIES), what).toBe(true);
    expect(isSchemaRefusal(res), what).toBe(false);
    expect(res.body, what).toEqual({ code: expect.any(String), detail: expect.any(String) });
    return false;
  };
  const sample = routeKey().chain((k) => fc.tuple(fc.constant(k), byKey(k).valid));
  await fc.assert(
    fc.asyncProperty(sample, async ([k, body]) => {
      await check(byKey(k), body);
    }),
    { numRuns: 250 },
  );
  // Each route accepts some of them: the generator makes bodies the handlers take. Some
  // routes refuse most valid bodies on checks beyond the schema (PUT of an endpoint with a
  // secret, a requeue naming no dead letter; an endpoint's many fields each checked when
  // saved, where about 1 body in 100 is taken): more samples for those, until one is taken.
  for (const route of routes.filter((r) => !accepted.has(r.key)))
    for (const body of fc.sample(route.valid, 1000)) if (await check(route, body)) break;
  expect(routes.map((r) => r.key).filter((k) => !accepted.has(k))).toEqual([]);
});

test("bodies wrong in one way: a 422 validation_error naming the field, and nothing written", {
  timeout: LOADED_TIMEOUT_MS,
}, async () => {
  const sample = routeKey().chain((k) => fc.tuple(fc.constant(k), byKey(k).invalid));
  await fc.assert(
    fc.asyncProperty(sample, async ([k, inv]) => {
      const route = byKey(k);
      const before = await footprint();
      const res = await send(route, inv.value);
      const what = `${describeExchange(route, inv.value, res)} (${inv.reason})`;
      expectRefusal(res, REFUSAL.schema, what);
      expect(isSchemaRefusal(res), what).toBe(true);
      expect(res.body.detail, what).toContain(named(inv));
      expect(await footprint(), what).toEqual(before);
    }),
    { numRuns: 250 },
  );
});
