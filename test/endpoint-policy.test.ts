/**
 * The endpoint-policy table (src/domain/endpoint-policy.ts) against the consumers that need
 * a database: the select list returns each column and the API answers each field; the
 * OpenAPI document describes each; the effective-value SQL picks the endpoint's own, the
 * fallback column or the default; the dashboard's form sets and clears each field through
 * the API. src/domain/endpoint-policy.test.ts checks the rest.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { getEndpoint } from "../src/db/queries/endpoints.ts";
import { ENDPOINT_POLICY, type PolicyField } from "../src/domain/endpoint-policy.ts";
import { effectiveSql, policySchemaProperties } from "../src/domain/endpoint-policy-derived.ts";
import { apiCalls, V1 } from "./helpers/api-calls.ts";
import { type DashboardClient, dashboardClient } from "./helpers/dashboard-client.ts";
import { type Harness, startHarness } from "./helpers/harness.ts";
import { type Receiver, startReceiver } from "./helpers/receiver.ts";

const TABLE = ENDPOINT_POLICY as readonly PolicyField[];
/**
 * A value within each field's bounds that no default has, distinct per field; for a
 * choice, its last word (the first is the default).
 */
const sample = (i: number) => (f: PolicyField) =>
  f.sqlType === "integer"
    ? Math.min(f.max, Math.max(f.min, 1_000 + i))
    : f.values[f.values.length - 1]!;

let h: Harness;
let rx: Receiver;
let admin: DashboardClient;
const { createApp, createEndpoint } = apiCalls(() => ({ h, rx }));

beforeAll(async () => {
  rx = await startReceiver();
  h = await startHarness();
  admin = dashboardClient(h.api);
  await admin.signIn(h.adminKey);
});
afterAll(async () => {
  await h?.close();
  await rx?.close();
});

describe("endpoint policy", () => {
  test("the select list returns each column and the API answers each field (aliases too)", async () => {
    const app = await createApp();
    const policy = Object.fromEntries(TABLE.map((f, i) => [f.api, sample(i)(f)]));
    const ep = await createEndpoint(app.id, policy);
    const row = (await getEndpoint(h.db.pool, ep.id)) as unknown as Record<string, unknown>;
    const got = (await h.call("GET", `${V1}/app/${app.id}/endpoint/${ep.id}`)).body;
    for (const [i, f] of TABLE.entries()) {
      expect(row[f.column], f.column).toBe(sample(i)(f));
      expect(got[f.api], f.api).toBe(sample(i)(f));
      if (f.alias) expect(got[f.alias], f.alias).toBe(sample(i)(f));
    }
  });

  test("the OpenAPI document shows each field with its bounds and description", async () => {
    const doc = (await h.api.inject({ method: "GET", url: "/docs/json" })).json();
    const expected = policySchemaProperties() as Record<string, { description: string }>;
    for (const [path, method] of [
      ["/api/v1/app/{appId}/endpoint", "post"],
      ["/api/v1/app/{appId}/endpoint/{endpointId}", "put"],
      ["/api/v1/app/{appId}/endpoint/{endpointId}", "patch"],
    ] as const) {
      const props =
        doc.paths[path][method].requestBody.content["application/json"].schema.properties;
      for (const f of TABLE) {
        expect(props[f.api], `${method} ${f.api}`).toMatchObject({
          nullable: true,
          description: expected[f.api]!.description,
          ...(f.sqlType === "integer"
            ? { type: "integer", minimum: f.min, maximum: f.max }
            : { type: "string", enum: expect.arrayContaining([...f.values]) }),
        });
        expect(props[f.api].description).toContain(f.description);
        if (f.alias && f.sqlType === "integer") expect(props[f.alias].minimum).toBe(f.min);
      }
    }
  });

  test("effectiveSql: the endpoint's own value, its fallback column, else the default", async () => {
    const app = await createApp();
    const own = await createEndpoint(app.id, { maxInFlight: 3, throttleRate: 9, ratePerSecond: 4 });
    const bare = await createEndpoint(app.id, { throttleRate: 9 });
    const none = await createEndpoint(app.id, {});
    const { rows } = await h.db.pool.query(
      `select e.id, ${effectiveSql("e", "maxInFlight", "$2")} as max_in_flight,
              ${effectiveSql("e", "ratePerSecond")} as rate_per_second
       from endpoints e where e.id = any ($1::text[])`,
      [[own.id, bare.id, none.id], 77],
    );
    const byId = new Map(rows.map((r) => [r.id, r]));
    expect(byId.get(own.id)).toMatchObject({ max_in_flight: 3, rate_per_second: 4 });
    expect(byId.get(bare.id)).toMatchObject({ max_in_flight: 77, rate_per_second: 9 });
    expect(byId.get(none.id)).toMatchObject({ max_in_flight: 77, rate_per_second: null });
  });

  test("the dashboard's form shows each field, sets what is typed and clears what is emptied", async () => {
    const app = await createApp();
    const ep = await createEndpoint(app.id, { timeoutMs: 2_500, maxAttempts: 3, throttleRate: 5 });
    const form = await admin.get(`/dashboard/endpoints/${ep.id}/edit`);
    expect(form.statusCode).toBe(200);
    for (const f of TABLE.filter((f) => f.form))
      expect(form.body).toContain(
        f.sqlType === "integer"
          ? `name="${f.api}" min="${f.min}" max="${f.max}"`
          : `<select name="${f.api}"`,
      );
    expect(form.body).toContain('name="timeoutMs" min="100" max="300000" step="1" value="2500"');

    const saved = await admin.post(`/dashboard/endpoints/${ep.id}/edit`, {
      url: ep.url,
      description: "",
      policyFields: "1",
      timeoutMs: "",
      maxAttempts: "7",
      ratePerMinute: "120",
      whileDisabled: "skip",
    });
    expect(saved.statusCode, saved.body).toBe(303);
    const got = (await h.call("GET", `${V1}/app/${app.id}/endpoint/${ep.id}`)).body;
    // (throttleRate has no form field: the form leaves it as it was)
    expect(got).toMatchObject({
      timeoutMs: null,
      maxAttempts: 7,
      ratePerMinute: 120,
      throttleRate: 5,
      whileDisabled: "skip",
    });
    expect((await admin.get(`/dashboard/endpoints/${ep.id}/edit`)).body).toContain(
      '<option value="skip" selected>skip</option>',
    );

    const refused = await admin.post(`/dashboard/endpoints/${ep.id}/edit`, {
      url: ep.url,
      policyFields: "1",
      retryBaseMs: "5000",
      retryCapMs: "1000",
    });
    expect(refused.statusCode).toBe(400);
    expect(refused.body).toContain("retryCapMs must be &gt;= retryBaseMs");
    expect(refused.body).toContain(
      'name="retryCapMs" min="0" max="604800000" step="1" value="1000"',
    );
    expect(
      (await h.call("GET", `${V1}/app/${app.id}/endpoint/${ep.id}`)).body.retryCapMs,
    ).toBeNull();
  });
});
