/**
 * Every endpoint setting the dashboard's edit form carries (docs/dashboard.md, "Editing
 * an endpoint"): timeouts, retries and rate limits through the policy table's fields, and
 * the custom headers as `Name: value` lines, sensitive values shown as *** and kept when
 * *** is posted back; a line that is not a header is refused with the form again.
 */
import { afterAll, beforeAll, expect, test } from "vitest";
import { dashboardClient } from "./helpers/dashboard-client.ts";
import { type Harness, startHarness } from "./helpers/harness.ts";
import { newApp, newEndpoint, V1 } from "./helpers/seeded-deliveries.ts";

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(() => h?.close());

test("headers and the policy edited in the form; a sensitive value masked and kept", async () => {
  const appId = await newApp(h);
  const ep = await newEndpoint(h, appId, {
    headers: { "X-Team": "payments", Authorization: "Bearer never-shown" },
  });
  const admin = dashboardClient(h.api);
  await admin.signIn(h.adminKey);
  const form = await admin.get(`/dashboard/endpoints/${ep.id}/edit`);
  expect(form.statusCode).toBe(200);
  expect(form.body).toContain("X-Team: payments\nAuthorization: ***</textarea>");
  expect(form.body).not.toContain("never-shown");
  for (const name of ["timeoutMs", "maxAttempts", "retryBaseMs", "retryCapMs", "ratePerMinute"])
    expect(form.body).toContain(`data-policy="${name}"`);

  const saved = await admin.post(`/dashboard/endpoints/${ep.id}/edit`, {
    url: ep.url,
    description: "",
    method: "POST",
    bodyFormat: "json",
    policyFields: "1",
    timeoutMs: "4000",
    maxAttempts: "3",
    retryBaseMs: "2000",
    retryCapMs: "60000",
    ratePerMinute: "120",
    headersField: "1",
    headers: "X-Team: risk\r\nAuthorization: ***\r\nX-Region: eu",
  });
  expect(saved.statusCode, saved.body).toBe(303);
  const { rows } = await h.db.pool.query("select headers from endpoints where id = $1", [ep.id]);
  expect(rows[0].headers).toEqual({
    "X-Team": "risk",
    Authorization: "Bearer never-shown",
    "X-Region": "eu",
  });
  const api = await h.call("GET", `${V1}/app/${appId}/endpoint/${ep.id}`);
  expect(api.body).toMatchObject({
    timeoutMs: 4000,
    maxAttempts: 3,
    retryBaseMs: 2000,
    retryCapMs: 60000,
    ratePerMinute: 120,
  });

  const bad = await admin.post(`/dashboard/endpoints/${ep.id}/edit`, {
    url: ep.url,
    method: "POST",
    bodyFormat: "json",
    headersField: "1",
    headers: "X-Team: risk\nnot a header",
  });
  expect(bad.statusCode).toBe(422);
  expect(bad.body).toContain("Custom headers, line 2: write it as Name: value");
  expect(bad.body).toContain("X-Team: risk\nnot a header</textarea>");

  // an empty field removes them all
  const cleared = await admin.post(`/dashboard/endpoints/${ep.id}/edit`, {
    url: ep.url,
    method: "POST",
    bodyFormat: "json",
    headersField: "1",
    headers: "",
  });
  expect(cleared.statusCode, cleared.body).toBe(303);
  const after = await h.db.pool.query("select headers from endpoints where id = $1", [ep.id]);
  expect(after.rows[0].headers).toEqual({});
});
