/**
 * OAuth2 on the dashboard and the portal (docs/oauth2.md): the endpoint form's OAuth2
 * section (the secret never sent to the browser; an empty secret field keeps it, an empty
 * token URL removes OAuth2), and the detail pages' OAuth2 row: configured or not, never the
 * secret.
 */
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, expect, test } from "vitest";
import { dashboardClient } from "./helpers/dashboard-client.ts";
import { type Harness, startHarness } from "./helpers/harness.ts";
import { openPortal } from "./helpers/portal-client.ts";

const SECRET = `page-${randomBytes(8).toString("hex")}`;
let h: Harness;
let appId: string;

beforeAll(async () => {
  h = await startHarness({ encryptionKey: randomBytes(32).toString("base64") });
  appId = (await h.call("POST", "/api/v1/app", { name: "oauth2 pages" })).body.id;
}, 60_000);
afterAll(async () => {
  await h?.close();
});

async function oauthEndpoint(): Promise<string> {
  const res = await h.call("POST", `/api/v1/app/${appId}/endpoint`, {
    url: "http://127.0.0.1:9/hook",
    oauth2: {
      tokenUrl: "http://127.0.0.1:9/token",
      clientId: "relay",
      clientSecret: SECRET,
      scope: "hooks",
    },
  });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.id;
}
const stored = async (id: string) =>
  (await h.db.pool.query("select oauth2_secret from endpoints where id = $1", [id])).rows[0]
    .oauth2_secret as string | null;

test("the dashboard's form: shown without the secret, an empty secret keeps it, no token URL removes it", async () => {
  const id = await oauthEndpoint();
  const sealed = await stored(id);
  const admin = dashboardClient(h.api);
  await admin.signIn(h.adminKey);
  const form = await admin.get(`/dashboard/endpoints/${id}/edit`);
  expect(form.statusCode).toBe(200);
  expect(form.body).toContain(
    'name="oauthTokenUrl" maxlength="2048" size="40" value="http://127.0.0.1:9/token"',
  );
  expect(form.body).toContain('placeholder="set: leave empty to keep it"');
  expect(form.body).not.toContain(SECRET);
  const fields = {
    url: "http://127.0.0.1:9/hook",
    oauth2Fields: "1",
    hadOauthSecret: "1",
    oauthTokenUrl: "http://127.0.0.1:9/token",
    oauthClientId: "relay",
    oauthClientSecret: "",
    oauthScope: "hooks:write",
    oauthAudience: "",
    oauthAuthMethod: "client_secret_post",
  };
  const saved = await admin.post(`/dashboard/endpoints/${id}/edit`, fields);
  expect(saved.statusCode, saved.body).toBe(303);
  const got = (await h.call("GET", `/api/v1/app/${appId}/endpoint/${id}`)).body;
  expect(got.oauth2).toMatchObject({ scope: "hooks:write", authMethod: "client_secret_post" });
  expect(await stored(id)).toBe(sealed);
  const page = await admin.get(`/dashboard/endpoints/${id}`);
  expect(page.body).toContain(
    'data-testid="oauth2">client <code>relay</code> at <code>http://127.0.0.1:9/token</code>, scope <code>hooks:write</code>; secret set<',
  );
  expect(page.body).not.toContain(SECRET);
  const refused = await admin.post(`/dashboard/endpoints/${id}/edit`, {
    ...fields,
    oauthTokenUrl: "ftp://idp.example/token",
  });
  expect(refused.statusCode).toBe(422);
  expect(refused.body).toContain("oauth2.tokenUrl must use http or https");
  const removed = await admin.post(`/dashboard/endpoints/${id}/edit`, {
    ...fields,
    oauthTokenUrl: "",
  });
  expect(removed.statusCode, removed.body).toBe(303);
  expect((await h.call("GET", `/api/v1/app/${appId}/endpoint/${id}`)).body.oauth2).toBeNull();
  expect((await admin.get(`/dashboard/endpoints/${id}`)).body).toContain(
    'data-testid="oauth2">not configured<',
  );
});

test("the portal's endpoint page says OAuth2 is configured, never the secret", async () => {
  const id = await oauthEndpoint();
  const access = await h.call("POST", `/api/v1/auth/app-portal-access/${appId}`, {});
  expect(access.status).toBe(200);
  const portal = await openPortal(h.api, access.body.token);
  const page = await portal.get(`/portal/endpoints/${id}`);
  expect(page.statusCode).toBe(200);
  expect(page.body).toContain('data-testid="oauth2">client <code>relay</code>');
  expect(page.body).toContain("secret set");
  expect(page.body).not.toContain(SECRET);
  const edit = await portal.get(`/portal/endpoints/${id}/edit`);
  expect(edit.statusCode).toBe(200);
  expect(edit.body).toContain('name="oauthClientId" maxlength="1024" value="relay"');
  expect(edit.body).not.toContain(SECRET);
});
