/**
 * Pages stay bounded (docs/dashboard.md, "Payloads"; docs/security.md, "Input"): messages
 * the API accepted with a payload nested 4,000 and 10,000 levels deep, or wide and near
 * the body limit, and attempts with huge stored texts, give message pages in the dashboard
 * and the portal that answer 200, stay under PAGE_BOUND bytes and say what they leave out;
 * the raw payload downloads byte for byte, and only for those who may see the message.
 *
 * Real PostgreSQL (one cloned database); the API, dashboard and portal through inject().
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createApiKey } from "../src/api/auth.ts";
import { type DashboardClient, dashboardClient } from "./helpers/dashboard-client.ts";
import { type Harness, startHarness } from "./helpers/harness.ts";
import { openPortal } from "./helpers/portal-client.ts";

const V1 = "/api/v1";
/** What a message page may weigh at most, whatever its payload. */
const PAGE_BOUND = 300 * 1024;

let h: Harness;
let appA: string;
let appB: string;
let admin: DashboardClient;
/** a dashboard session of an app key of app B */
let dashB: DashboardClient;
let portalA: DashboardClient;
let portalB: DashboardClient;

const deep = (levels: number) =>
  `{"order":7,"deep":${"[".repeat(levels)}"bottom"${"]".repeat(levels)}}`;
/** ~900 KB of members, a sensitive one first (the page masks it; the download has it). */
const wide = () =>
  `{"email":"someone@example.com",${Array.from(
    { length: 9_000 },
    (_, i) => `"field_${i}":"${"v".repeat(80)}"`,
  ).join(",")}}`;

const payloads: Record<string, { text: string; note: RegExp; id?: string }> = {
  "4,000 levels": { text: deep(4_000), note: /nested deeper than 32 levels/ },
  "10,000 levels": { text: deep(10_000), note: /nested deeper than 32 levels/ },
  "wide, 900 KB": { text: wide(), note: /… [\d,]+ more bytes not shown/ },
};

async function send(appId: string, payloadText: string): Promise<string> {
  const res = await h.call(
    "POST",
    `${V1}/app/${appId}/msg?with_content=false`,
    `{"eventType":"order.paid","payload":${payloadText}}`,
  );
  expect(res.status).toBe(202);
  return res.body.id;
}

async function portal(appId: string): Promise<DashboardClient> {
  const link = await h.call("POST", `${V1}/auth/app-portal-access/${appId}`, {});
  return openPortal(h.api, link.body.token);
}

beforeAll(async () => {
  h = await startHarness();
  appA = (await h.call("POST", `${V1}/app`, { name: "A" })).body.id;
  appB = (await h.call("POST", `${V1}/app`, { name: "B" })).body.id;
  // an endpoint, so each message has a delivery (never sent: no worker runs)
  await h.call("POST", `${V1}/app/${appA}/endpoint`, { url: "http://127.0.0.1:9/a" });
  for (const p of Object.values(payloads)) p.id = await send(appA, p.text);
  admin = dashboardClient(h.api);
  await admin.signIn(h.adminKey);
  dashB = dashboardClient(h.api);
  await dashB.signIn((await createApiKey(h.db.pool, { role: "app", appId: appB })).key);
  portalA = await portal(appA);
  portalB = await portal(appB);
}, 60_000);
afterAll(async () => {
  await h?.close();
});

describe.each(Object.entries(payloads))("a payload %s", (_, p) => {
  test("the dashboard's and the portal's message pages: 200, bounded, the note, the link", async () => {
    for (const [client, path] of [
      [admin, `/dashboard/messages/${p.id}`],
      [admin, `/dashboard/messages?q=${p.id}`],
      [portalA, `/portal/messages/${p.id}`],
    ] as const) {
      const res = await client.get(path);
      expect(res.statusCode, `${path}: ${res.body.slice(0, 500)}`).toBe(200);
      expect(res.body.length, path).toBeLessThan(PAGE_BOUND);
      expect(res.body, path).toContain('data-testid="payload"');
      expect(res.body, path).toMatch(p.note);
      expect(res.body, path).toContain(`/${p.id}/payload"`);
      expect(res.body, path).toContain("order.paid");
      expect(res.body, path).not.toContain("someone@example.com");
    }
  });

  test("the download is the payload as stored, byte for byte, as a JSON file", async () => {
    for (const [client, path] of [
      [admin, `/dashboard/messages/${p.id}/payload`],
      [portalA, `/portal/messages/${p.id}/payload`],
    ] as const) {
      const res = await client.get(path);
      expect(res.statusCode, path).toBe(200);
      expect(res.headers["content-type"]).toBe("application/json; charset=utf-8");
      expect(res.headers["content-disposition"]).toBe(`attachment; filename="${p.id}.json"`);
      expect(res.headers["x-content-type-options"]).toBe("nosniff");
      expect(res.rawPayload.equals(Buffer.from(p.text))).toBe(true);
    }
  });

  test("another tenant can neither see nor download it (404)", async () => {
    for (const [client, path] of [
      [dashB, `/dashboard/messages/${p.id}`],
      [dashB, `/dashboard/messages/${p.id}/payload`],
      [portalB, `/portal/messages/${p.id}`],
      [portalB, `/portal/messages/${p.id}/payload`],
    ] as const) {
      const res = await client.get(path);
      expect(res.statusCode, path).toBe(404);
      expect(res.body).not.toContain("bottom");
      expect(res.body).not.toContain("field_1");
    }
  });
});

test("without a session the download is not served", async () => {
  const id = payloads["4,000 levels"]!.id;
  const dash = await h.api.inject({ method: "GET", url: `/dashboard/messages/${id}/payload` });
  expect(dash.statusCode).toBe(303);
  const port = await h.api.inject({ method: "GET", url: `/portal/messages/${id}/payload` });
  expect(port.statusCode).toBe(401);
  expect(port.body).not.toContain("bottom");
});

test("attempts' huge stored errors and responses are cut short on every page", async () => {
  const id = await send(appA, '{"small":true}');
  const { rows } = await h.db.pool.query(
    "select id, endpoint_id from deliveries where message_id = $1::text",
    [id],
  );
  // 3 attempts x 2 texts of 60,000 characters: more than PAGE_BOUND unclipped, and each
  // text 60 times the 1,000 characters a page shows (every character is masked first, so
  // the size is what this test costs)
  const huge = `${"e".repeat(60_000)}END`;
  for (let n = 1; n <= 3; n++) {
    await h.db.pool.query(
      `insert into attempts (delivery_id, message_id, endpoint_id, app_id, attempt_number,
         trigger, url, started_at, latency_ms, outcome, status_code, error_kind, error, response_body)
       values ($1::bigint, $2::text, $3::text, $4::text, $5::int, 'scheduled', 'http://127.0.0.1:9/a',
         now(), 5, 'failure', 500, 'http_status', $6::text, $6::text)`,
      [rows[0].id, id, rows[0].endpoint_id, appA, n, huge],
    );
  }
  for (const [client, path] of [
    [admin, `/dashboard/messages/${id}`],
    [admin, `/dashboard/endpoints/${rows[0].endpoint_id}`],
    [portalA, `/portal/messages/${id}`],
    [portalA, `/portal/endpoints/${rows[0].endpoint_id}`],
  ] as const) {
    const res = await client.get(path);
    expect(res.statusCode, path).toBe(200);
    expect(res.body.length, path).toBeLessThan(PAGE_BOUND);
    expect(res.body, path).toContain("eeee");
    expect(res.body, path).not.toContain("END");
    expect(res.body, path).toMatch(/… \([\d,]+ more characters\)/);
  }
});
