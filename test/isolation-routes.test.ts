/**
 * Tenant isolation, the routes (docs/security.md, "API keys"): every registered route has
 * a tenant-scoping decision in the classification table (test/helpers/tenant-routes.ts),
 * which the other isolation-*.test.ts files walk. The routes are discovered from Fastify's
 * own route tree (printRoutes, which includes routes hidden from the OpenAPI document): a
 * route added without a decision fails here.
 *
 * The in-process API on a real PostgreSQL (one cloned database).
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type Harness, startHarness } from "./helpers/harness.ts";
import { discoveredRoutes, RULES } from "./helpers/tenant-routes.ts";

let h: Harness;

beforeAll(async () => {
  h = await startHarness();
  await h.api.ready();
});
afterAll(async () => {
  await h?.close();
});

describe("every registered route is classified", () => {
  test("the discovered routes equal the classification table", () => {
    const discovered = discoveredRoutes(h.api);
    // the parser itself works: the OpenAPI document's routes are all among the discovered ones
    const doc = h.api.swagger() as { paths: Record<string, Record<string, unknown>> };
    const documented = Object.entries(doc.paths).flatMap(([p, ops]) =>
      Object.keys(ops).map((m) => `${m.toUpperCase()} ${p.replace(/\{(\w+)\}/g, ":$1")}`),
    );
    expect(documented.length).toBeGreaterThan(30);
    expect(discovered).toEqual(expect.arrayContaining(documented));

    const unclassified = discovered.filter((r) => !RULES.has(r));
    const stale = [...RULES.keys()].filter((r) => !discovered.includes(r));
    expect(unclassified, "routes without a tenant-scoping decision: add them to TABLE").toEqual([]);
    expect(stale, "classified routes that no longer exist").toEqual([]);
  });
});
