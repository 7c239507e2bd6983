/**
 * The endpoint listings' first figures (docs/operations.md, "Latency and success figures"):
 * an endpoint that answered after its stored figures were made, which hold no sample, shows
 * figures computed on the spot in the API's list and the dashboard's table, before
 * maintenance refreshes the stored copy; every other row shows the stored copy.
 *
 * Real PostgreSQL, a real receiver and an in-process worker; the harness runs no
 * maintenance, so nothing refreshes the stored figures unless the test does.
 */
import { afterAll, beforeAll, expect, test } from "vitest";
import { refreshLatencyStats } from "../src/health/latency-stats.ts";
import { dashboardClient } from "./helpers/dashboard-client.ts";
import { type Harness, startHarness } from "./helpers/harness.ts";
import { type Receiver, startReceiver, waitFor } from "./helpers/receiver.ts";

const V1 = "/api/v1";

let h: Harness;
let rx: Receiver;
let appId = "";
const ids: Record<"ok" | "failing" | "quiet", string> = { ok: "", failing: "", quiet: "" };

beforeAll(async () => {
  h = await startHarness({ ssrfAllowlist: ["127.0.0.0/8"] });
  rx = await startReceiver((req) => ({ status: req.path === "/failing" ? 500 : 200 }));
  h.startWorker();
  const app = await h.call("POST", `${V1}/app`, { name: "first-figures" });
  appId = app.body.id;
  for (const name of ["ok", "failing", "quiet"] as const) {
    const ep = await h.call("POST", `${V1}/app/${appId}/endpoint`, {
      url: `${rx.url}/${name}`,
      maxAttempts: 1,
      eventTypes: [name],
    });
    expect(ep.status, JSON.stringify(ep.body)).toBe(201);
    ids[name] = ep.body.id;
  }
});

afterAll(async () => {
  await h?.close();
  await rx?.close();
});

async function send(eventType: string, n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    const res = await h.call("POST", `${V1}/app/${appId}/msg`, { eventType, payload: { i } });
    expect(res.status).toBe(202);
  }
}

async function answered(endpointId: string, n: number): Promise<void> {
  await waitFor(
    async () =>
      (
        await h.db.pool.query(
          "select count(*)::int as n from latency_samples where endpoint_id = $1",
          [endpointId],
        )
      ).rows[0].n >= n,
    15_000,
    `${n} answers of ${endpointId}`,
  );
}

interface Figures {
  samples: number;
  successRate: number | null;
  p50Ms: number | null;
  p95Ms: number | null;
}

/** GET /health/endpoints: each of the app's endpoints' latency figures. */
async function listed(): Promise<Record<string, Figures>> {
  const res = await h.call("GET", `${V1}/health/endpoints?app_id=${appId}`);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return Object.fromEntries(
    res.body.data.map((e: { endpointId: string; latency: Figures }) => [e.endpointId, e.latency]),
  );
}

/** The dashboard table's success and p95 cells of the endpoint whose URL ends in `name`. */
async function tableCells(name: string): Promise<{ success: string; p95: string }> {
  const admin = dashboardClient(h.api);
  await admin.signIn(h.adminKey);
  const page = await admin.get(`/dashboard/endpoints?app=${appId}`);
  expect(page.statusCode).toBe(200);
  const row = page.body.split("<tr>").find((r) => r.includes(`${rx.url}/${name}</a>`));
  expect(row, `a row for /${name}`).toBeDefined();
  // a cell's text, "–" for no value (a muted span)
  const cells = [...row!.matchAll(/<td class="num[^"]*">(.*?)<\/td>/g)].map((m) =>
    m[1]!.replace(/<[^>]*>/g, ""),
  );
  // success, p50, p95, p99, backlog, oldest pending
  return { success: cells[0]!, p95: cells[2]! };
}

test("before any refresh, endpoints that answered show their figures; one that did not shows none", async () => {
  await send("ok", 3);
  await send("failing", 2);
  await answered(ids.ok, 3);
  await answered(ids.failing, 2);
  const stored = await h.db.pool.query(
    "select count(*)::int as n from endpoint_health where stats_at is not null",
  );
  expect(stored.rows[0].n, "nothing refreshed the stored figures").toBe(0);

  const figures = await listed();
  expect(figures[ids.ok]).toMatchObject({ samples: 3, successRate: 1 });
  expect(figures[ids.ok]!.p95Ms).toEqual(expect.any(Number));
  expect(figures[ids.failing]).toMatchObject({ samples: 2, successRate: 0 });
  expect(figures[ids.quiet]).toMatchObject({ samples: 0, successRate: null, p95Ms: null });

  expect((await tableCells("ok")).success).toBe("100.0%");
  expect((await tableCells("ok")).p95).toMatch(/^\d+ ms$/);
  expect((await tableCells("failing")).success).toBe("0.0%");
  expect(await tableCells("quiet")).toEqual({ success: "–", p95: "–" });
});

test("once stored, the listings show the stored copy, not figures computed per view", async () => {
  await refreshLatencyStats(h.db.pool, h.config.health);
  const before = await listed();
  expect(before[ids.ok]).toMatchObject({ samples: 3, successRate: 1 });
  // Samples gone from under the stored copy: a listing computing them now would show none.
  await h.db.pool.query("delete from latency_samples where endpoint_id = $1", [ids.ok]);
  expect((await listed())[ids.ok]).toEqual(before[ids.ok]);
  expect((await tableCells("ok")).success).toBe("100.0%");
});

test("an endpoint that answers after a refresh that stored no sample for it shows figures at once", async () => {
  // the refresh above stored "no sample" for the quiet endpoint, at stats_at
  const quiet = await h.db.pool.query(
    "select samples, stats_at from endpoint_health where endpoint_id = $1",
    [ids.quiet],
  );
  expect(quiet.rows[0]).toMatchObject({ samples: 0, stats_at: expect.any(Date) });
  await send("quiet", 2);
  await answered(ids.quiet, 2);
  expect((await listed())[ids.quiet]).toMatchObject({ samples: 2, successRate: 1 });
  expect((await tableCells("quiet")).success).toBe("100.0%");
});
