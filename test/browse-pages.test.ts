/**
 * Browsing in the dashboard and the portal (docs/browse.md): the message list filtered
 * by event type, channel, status, endpoint and time, with its status column and paging
 * through the API's iterator; the export links stream the filtered list; a filter the
 * API refuses is a readable message on the page (422); the portal sees only its app.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { dashboardClient } from "./helpers/dashboard-client.ts";
import { type Harness, startHarness } from "./helpers/harness.ts";
import { openPortal } from "./helpers/portal-client.ts";
import { newApp, newEndpoint, type Seeded, seed, V1 } from "./helpers/seeded-deliveries.ts";

let h: Harness;
let appId: string;
let otherApp: string;
let ep1: string;
let ep2: string;
let paid: string;
let failed: string;
let dead: Seeded[];
let otherMsg: string;

beforeAll(async () => {
  h = await startHarness();
  appId = await newApp(h);
  otherApp = await newApp(h);
  ep1 = (await newEndpoint(h, appId, { eventTypes: ["order.paid", "order.failed"] })).id;
  ep2 = (await newEndpoint(h, appId, { eventTypes: ["seeded.event"] })).id;
  const otherEp = (await newEndpoint(h, otherApp)).id;
  // 55 dead letters to ep2, older than the two messages sent through the API
  dead = await seed(
    h.db.pool,
    Array.from({ length: 55 }, (_, i) => ({
      endpointId: ep2,
      status: "dead_letter" as const,
      createdAt: new Date(Date.now() - (i + 2) * 60_000),
    })),
  );
  paid = (
    await h.call("POST", `${V1}/app/${appId}/msg`, {
      eventType: "order.paid",
      payload: { n: 1 },
      channels: ["eu"],
    })
  ).body.id;
  failed = (
    await h.call("POST", `${V1}/app/${appId}/msg`, { eventType: "order.failed", payload: {} })
  ).body.id;
  otherMsg = (await seed(h.db.pool, [{ endpointId: otherEp, status: "delivered" }]))[0]!.messageId;
  // an attempt of the newest dead letter that got a 503, and of the oldest that got none
  await h.db.pool.query(
    `insert into attempts (delivery_id, message_id, endpoint_id, app_id, attempt_number, trigger,
                           url, started_at, latency_ms, outcome, status_code, error_kind)
     select d.id, d.message_id, d.endpoint_id, d.app_id, 1, 'scheduled', 'http://127.0.0.1:9/x',
            now(), 12, 'failure', $2::integer, $3::text
     from deliveries d where d.id = $1::bigint`,
    [dead[0]!.deliveryId, 503, null],
  );
  await h.db.pool.query(
    `insert into attempts (delivery_id, message_id, endpoint_id, app_id, attempt_number, trigger,
                           url, started_at, latency_ms, outcome, status_code, error_kind)
     select d.id, d.message_id, d.endpoint_id, d.app_id, 1, 'scheduled', 'http://127.0.0.1:9/x',
            now(), 12, 'failure', null, 'timeout'
     from deliveries d where d.id = $1::bigint`,
    [dead[54]!.deliveryId],
  );
}, 60_000);
afterAll(() => h?.close());

const rowsOf = (page: string) => [...page.matchAll(/<code>(msg_[^<]+)<\/code>/g)].map((m) => m[1]);

describe("the dashboard's message list", () => {
  test("filters, a status column, paging and export links that keep the filters", async () => {
    const c = dashboardClient(h.api);
    await c.signIn(h.adminKey);
    const list = (q: string) => c.get(`/dashboard/message-list?app=${appId}&${q}`);

    const byType = await list("event_types=order.paid");
    expect(byType.statusCode).toBe(200);
    expect(rowsOf(byType.body)).toEqual([paid]);
    expect(byType.body).toContain(
      'data-testid="message-status"><span class="badge pending">pending 1</span>',
    );
    expect(byType.body).toContain(
      `href="/dashboard/message-list/export?app=${appId}&amp;event_types=order.paid&amp;format=csv"`,
    );
    expect(rowsOf((await list("channel=eu")).body)).toEqual([paid]);
    expect(rowsOf((await list(`endpoint=${ep1}`)).body)).toEqual([failed, paid]);
    expect(rowsOf((await list("event_types=order.paid,order.failed")).body)).toEqual([
      failed,
      paid,
    ]);
    // the dead letters were made 2 to 56 minutes ago: a window in UTC, as the field types it
    const utc = (msAgo: number) => new Date(Date.now() - msAgo).toISOString().slice(0, 19);
    const window = await list(`after=${utc(10.5 * 60_000)}&before=${utc(60_000)}`);
    expect(rowsOf(window.body)).toHaveLength(9);
    // as a browser sends a whole minute: no seconds
    const minutes = await list(`after=${utc(30 * 60_000).slice(0, 16)}&event_types=seeded.event`);
    expect(minutes.statusCode).toBe(200);
    expect(rowsOf(minutes.body).length).toBeGreaterThan(20);

    // 55 dead letters: a page of 50, then the older 5 through the iterator
    // newest first by id (ids sort as they were made)
    const deadIds = dead
      .map((d) => d.messageId)
      .sort()
      .reverse();
    const first = await list("status=dead_letter");
    expect(rowsOf(first.body)).toEqual(deadIds.slice(0, 50));
    expect(first.body).toContain('<span class="badge dead_letter">dead letter 1</span>');
    const older = /<a href="([^"]+)">Older<\/a>/.exec(first.body)![1]!.replaceAll("&amp;", "&");
    expect(older).toContain("status=dead_letter");
    const second = await c.get(older);
    expect(rowsOf(second.body)).toEqual(deadIds.slice(50));
    expect(second.body).toContain(">Newer</a>");
    expect(second.body).not.toContain(">Older</a>");
  });

  test("the export link streams the filtered list as CSV or JSON", async () => {
    const c = dashboardClient(h.api);
    await c.signIn(h.adminKey);
    const csv = await c.get(`/dashboard/message-list/export?app=${appId}&status=pending`);
    expect(csv.statusCode).toBe(200);
    expect(csv.headers["content-type"]).toBe("text/csv; charset=utf-8");
    expect(csv.headers["content-disposition"]).toContain("attachment;");
    const lines = csv.body.trimEnd().split("\r\n");
    expect(lines.slice(1).map((l) => l.split(",")[0])).toEqual([failed, paid]);
    const json = await c.get(
      `/dashboard/message-list/export?app=${appId}&status=dead_letter&format=json`,
    );
    const body = JSON.parse(json.body);
    expect(body).toMatchObject({ truncated: false, maxRows: 100_000 });
    expect(body.data).toHaveLength(55);
  });

  test("an unknown status or a bad date: the form again, with the API's reason, 422", async () => {
    const c = dashboardClient(h.api);
    await c.signIn(h.adminKey);
    for (const q of ["status=lost", "after=yesterday", "before=2026-02-30T10:00"]) {
      const res = await c.get(`/dashboard/message-list?app=${appId}&${q}`);
      expect(res.statusCode, q).toBe(422);
      expect(res.body, q).toContain('data-testid="message-filters"');
      expect(res.body, q).toMatch(
        /role="alert" data-testid="filter-error">These filters cannot be used: [^<]*(delivery_status|after|before)/,
      );
    }
    const exp = await c.get(`/dashboard/message-list/export?app=${appId}&status=lost`);
    expect(exp.statusCode).toBe(422);
    expect(exp.body).toContain("delivery_status");
  });

  test("an app's key sees its own app only", async () => {
    const key = await h.call("POST", `${V1}/api-keys`, { name: "k", role: "app", appId: otherApp });
    expect(key.status, JSON.stringify(key.body)).toBe(201);
    const c = dashboardClient(h.api);
    await c.signIn(key.body.key);
    const res = await c.get(`/dashboard/message-list?app=${appId}`);
    expect(rowsOf(res.body)).toEqual([otherMsg]);
    const exp = await c.get(`/dashboard/message-list/export?app=${appId}`);
    expect(
      exp.body
        .trimEnd()
        .split("\r\n")
        .slice(1)
        .map((l) => l.split(",")[0]),
    ).toEqual([otherMsg]);
  });
});

describe("the attempt lists", () => {
  test("the dashboard's: an endpoint's attempts by response class, result and event type", async () => {
    const c = dashboardClient(h.api);
    await c.signIn(h.adminKey);
    const list = (q: string) => c.get(`/dashboard/attempt-list?app=${appId}&endpoint=${ep2}&${q}`);
    const all = await list("");
    expect(all.statusCode).toBe(200);
    expect(rowsOf(all.body).sort()).toEqual([dead[0]!.messageId, dead[54]!.messageId].sort());
    expect(all.body).toContain(
      '<td data-testid="attempt-status"><span class="badge failed">fail</span>',
    );
    expect(rowsOf((await list("status_code_class=500")).body)).toEqual([dead[0]!.messageId]);
    const none = await list("status_code_class=0");
    expect(rowsOf(none.body)).toEqual([dead[54]!.messageId]);
    expect(none.body).toContain("<td>timeout</td>");
    expect(rowsOf((await list("result=success")).body)).toEqual([]);
    expect(rowsOf((await list("event_types=order.paid")).body)).toEqual([]);
    const link = /href="(\/dashboard\/attempt-list\/export[^"]+format=csv)"/
      .exec((await list("status_code_class=500")).body)![1]!
      .replaceAll("&amp;", "&");
    expect(link).toContain("status_code_class=500");
    const exported = await c.get(link);
    expect(exported.statusCode).toBe(200);
    expect(exported.headers["content-type"]).toBe("text/csv; charset=utf-8");
    expect(
      exported.body
        .trimEnd()
        .split("\r\n")
        .slice(1)
        .map((l) => l.split(",")[1]),
    ).toEqual([dead[0]!.messageId]);
    const bad = await list("status_code_class=250");
    expect(bad.statusCode).toBe(422);
    expect(bad.body).toContain("These filters cannot be used:");
    expect(bad.body).toContain("status_code_class");
  });

  test("the portal's: its app's endpoints only", async () => {
    const res = await h.call("POST", `${V1}/auth/app-portal-access/${appId}`, {});
    const c = await openPortal(h.api, res.body.token);
    const page = await c.get(`/portal/attempts?endpoint=${ep2}&status_code_class=500`);
    expect(page.statusCode).toBe(200);
    expect(rowsOf(page.body)).toEqual([dead[0]!.messageId]);
    const exported = await c.get(`/portal/attempt-export?endpoint=${ep2}&format=json`);
    expect(exported.statusCode).toBe(200);
    expect(JSON.parse(exported.body).data).toHaveLength(2);
    const bad = await c.get("/portal/attempts?after=yesterday");
    expect(bad.statusCode).toBe(422);
    expect(bad.body).toContain("after");
  });
});

describe("the portal's delivery log", () => {
  async function portal() {
    const res = await h.call("POST", `${V1}/auth/app-portal-access/${appId}`, {});
    return openPortal(h.api, res.body.token);
  }

  test("filters and a status column; the export holds the app's messages only", async () => {
    const c = await portal();
    const all = await c.get("/portal/messages");
    expect(all.statusCode).toBe(200);
    expect(all.body).toContain('data-testid="message-filters"');
    expect(all.body).toContain("<th>Status</th>");
    expect(rowsOf(all.body)).not.toContain(otherMsg);
    const paidOnly = await c.get("/portal/messages?event_types=order.paid&channel=eu");
    expect(rowsOf(paidOnly.body)).toEqual([paid]);
    expect(paidOnly.body).toContain('<span class="badge pending">pending 1</span>');
    expect(paidOnly.body).toContain(
      'href="/portal/message-export?event_types=order.paid&amp;channel=eu&amp;format=csv"',
    );
    const exp = await c.get("/portal/message-export?format=json");
    const ids = JSON.parse(exp.body).data.map((m: { id: string }) => m.id);
    expect(ids).toHaveLength(57);
    expect(ids).not.toContain(otherMsg);
  });

  test("a bad filter is a readable message, 422", async () => {
    const c = await portal();
    const res = await c.get("/portal/messages?status=lost");
    expect(res.statusCode).toBe(422);
    expect(res.body).toContain("These filters cannot be used:");
    expect(res.body).toContain("delivery_status");
  });
});
