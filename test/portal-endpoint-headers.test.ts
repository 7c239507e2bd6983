/**
 * The portal's endpoint page shows the endpoint's custom headers as the API answers them
 * (issue 30, item 6): sensitive values masked, the others as set, names and values escaped.
 */
import { afterAll, beforeAll, expect, test } from "vitest";
import { type Harness, startHarness } from "./helpers/harness.ts";
import { openPortal } from "./helpers/portal-client.ts";
import { newApp, newEndpoint } from "./helpers/seeded-deliveries.ts";

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(() => h?.close());

test("the portal's endpoint page lists custom headers, secrets masked", async () => {
  const appId = await newApp(h);
  const ep = await newEndpoint(h, appId, {
    headers: {
      "X-Team": "<b>payments</b>",
      Authorization: "Bearer never-shown",
      "X-Api-Key": "k1-hidden",
    },
  });
  const bare = await newEndpoint(h, appId);
  const access = await h.call("POST", `/api/v1/auth/app-portal-access/${appId}`, {});
  expect(access.status).toBe(200);
  const portal = await openPortal(h.api, access.body.token);

  const res = await portal.get(`/portal/endpoints/${ep.id}`);
  expect(res.statusCode).toBe(200);
  const facts = /<dd data-testid="custom-headers">([\s\S]*?)<\/dd>/.exec(res.body)?.[1] ?? "";
  expect(facts).toContain("<code>X-Team: &lt;b&gt;payments&lt;/b&gt;</code>");
  expect(facts).toContain(
    '<code>Authorization: ***</code> <span class="muted">(sensitive, masked)</span>',
  );
  expect(facts).toContain("<code>X-Api-Key: ***</code>");
  expect(res.body).not.toContain("never-shown");
  expect(res.body).not.toContain("k1-hidden");

  const none = await portal.get(`/portal/endpoints/${bare.id}`);
  expect(/<dd data-testid="custom-headers">([\s\S]*?)<\/dd>/.exec(none.body)?.[1]).toBe(
    '<span class="muted">–</span>',
  );
});
