/**
 * Chart data (docs/dashboard.md, "Chart data"): GET /api/v1/stats/buckets from the
 * attempts directly and from the maintenance rollup gives the same buckets; percentiles
 * from the histogram are within 5% of the exact ones; scoping as the API; and the
 * open-alerts gauge in /metrics.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createApiKey } from "../src/api/auth.ts";
import type { Pool } from "../src/db/pool.ts";
import { syncAlerts } from "../src/ops/alerts.ts";
import { rollUpCharts } from "../src/ops/chart-rollup.ts";
import { dashboardClient } from "./helpers/dashboard-client.ts";
import { type Harness, startHarness, testConfig } from "./helpers/harness.ts";
import { newApp, newEndpoint, V1 } from "./helpers/seeded-deliveries.ts";

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h?.close();
});

interface Row {
  agoMs: number;
  ms: number;
  status: number | null;
}

/** Attempt rows as the result writer leaves them, created `agoMs` before now. */
async function insertAttempts(pool: Pool, ep: { id: string; appId: string }, rows: Row[]) {
  await pool.query(
    `insert into attempts (delivery_id, message_id, endpoint_id, app_id, attempt_number, trigger,
                           url, started_at, latency_ms, outcome, status_code, created_at)
     select 1, 'msg_x', $1::text, $2::text, 1, 'scheduled', 'http://x', now(), r.ms,
            case when r.status between 200 and 299 then 'success' else 'failure' end,
            r.status, now() - r.ago * interval '1 millisecond'
     from unnest($3::int[], $4::int[], $5::int[]) as r(ago, ms, status)`,
    [ep.id, ep.appId, rows.map((r) => r.agoMs), rows.map((r) => r.ms), rows.map((r) => r.status)],
  );
}

/** The nearest-rank percentile. */
const exact = (values: number[], q: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.max(0, Math.ceil(q * sorted.length) - 1)]!;
};

describe("GET /api/v1/stats/buckets", () => {
  let appId: string;
  let ep: { id: string; appId: string };
  let other: { id: string; appId: string };
  const minute = 60_000;
  // three minutes of history (rolled up later) and one of the last seconds (never rolled)
  const rows: Row[] = [];
  beforeAll(async () => {
    appId = await newApp(h);
    ep = await newEndpoint(h, appId);
    other = await newEndpoint(h, await newApp(h));
    for (let m = 0; m < 3; m++) {
      for (let i = 0; i < 200; i++) {
        rows.push({
          agoMs: (10 + m) * minute + i * 100,
          ms: 20 + ((i * 37) % 400) + m * 100,
          status: i % 10 === 0 ? 503 : i % 25 === 1 ? null : 200,
        });
      }
    }
    // the 50 fast 404s span half a second a few seconds back, inside one minute bucket
    // whenever the test runs (at 5.0-5.5 s back they straddled a minute's start in about
    // one run of 120, and the last bucket held part of them)
    const back = (Date.now() - 5_000) % minute >= 700 ? 5_000 : 6_000;
    for (let i = 0; i < 50; i++) rows.push({ agoMs: back + i * 10, ms: 5 + i, status: 404 });
    await insertAttempts(h.db.pool, ep, rows);
    await insertAttempts(h.db.pool, other, [{ agoMs: 5 * minute, ms: 1, status: 200 }]);
  });

  const get = async (query: string, key = h.adminKey) => {
    const res = await h.call("GET", `${V1}/stats/buckets?${query}`, undefined, {
      authorization: `Bearer ${key}`,
    });
    return res;
  };

  test("buckets of one endpoint: counts by outcome and status class, percentiles within 5%", async () => {
    const res = await get(`endpoint_id=${ep.id}&hours=1&bucket_minutes=1`);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.bucketSeconds).toBe(60);
    expect(res.body.endpointId).toBe(ep.id);
    // one bucket per minute of the hour, empty ones included
    expect(res.body.data.length).toBeGreaterThanOrEqual(60);
    const data = res.body.data as Record<string, number | null>[];
    const total = data.reduce((n, b) => n + (b.attempts as number), 0);
    expect(total).toBe(rows.length);
    const sum = (k: string) => data.reduce((n, b) => n + (b[k] as number), 0);
    expect(sum("s5xx")).toBe(rows.filter((r) => r.status === 503).length);
    expect(sum("error")).toBe(rows.filter((r) => r.status === null).length);
    expect(sum("s4xx")).toBe(50);
    expect(sum("success")).toBe(rows.filter((r) => r.status === 200).length);
    // the bucket of the last seconds holds the 50 fast 404s alone
    const last = data.filter((b) => (b.attempts as number) > 0).at(-1)!;
    expect(last.s4xx).toBe(50);
    const lastMs = rows.filter((r) => r.status === 404).map((r) => r.ms);
    for (const [q, key] of [
      [0.5, "p50Ms"],
      [0.95, "p95Ms"],
      [0.99, "p99Ms"],
    ] as const) {
      const want = exact(lastMs, q);
      expect(Math.abs((last[key] as number) - want) / want).toBeLessThanOrEqual(0.05);
    }
    const empty = data.find((b) => b.attempts === 0)!;
    expect(empty.p50Ms).toBeNull();
  });

  test("the rollup gives the same buckets as the attempts themselves", async () => {
    const before = (await get(`endpoint_id=${ep.id}&hours=1&bucket_minutes=5`)).body.data;
    const minutesBefore = (await get(`endpoint_id=${ep.id}&hours=1&bucket_minutes=1`)).body.data;
    const allBefore = (await get("hours=1&bucket_minutes=5")).body.data;
    const rolled = await rollUpCharts(h.db.pool, { keepMs: 25 * 3_600_000 });
    // every settled attempt (older than a minute) went into the rollup; the 404s did not
    expect(rolled).toBe(rows.length - 50 + 1);
    const after = (await get(`endpoint_id=${ep.id}&hours=1&bucket_minutes=5`)).body.data;
    const minutesAfter = (await get(`endpoint_id=${ep.id}&hours=1&bucket_minutes=1`)).body.data;
    const allAfter = (await get("hours=1&bucket_minutes=5")).body.data;
    const strip = (d: { t: string }[]) => d.map(({ t, ...rest }) => [t, rest]);
    // (the range may have moved on by a bucket between the calls: compare the common ones)
    const common = (a: { t: string }[], b: { t: string }[]) => {
      const times = new Set(b.map((x) => x.t));
      return strip(a.filter((x) => times.has(x.t)));
    };
    expect(common(after, before)).toEqual(common(before, after));
    expect(common(minutesAfter, minutesBefore)).toEqual(common(minutesBefore, minutesAfter));
    // both spans were written: 5-minute rows for 5-minute charts, 1-minute rows for the rest
    const spans = await h.db.pool.query(
      "select span, sum(success + failure)::int as n from chart_counts where scope = $1 group by span order by span",
      [`ep:${ep.id}`],
    );
    expect(spans.rows).toEqual([
      { span: 1, n: rows.length - 50 },
      { span: 5, n: rows.length - 50 },
    ]);
    expect(common(allAfter, allBefore)).toEqual(common(allBefore, allAfter));
    // a second rollup right away has nothing new and changes nothing
    expect(await rollUpCharts(h.db.pool, { keepMs: 25 * 3_600_000 })).toBe(0);
  });

  test("scoping: everything for admin, an app's own for its key, another app's endpoint is 404", async () => {
    const all = (await get("hours=1")).body;
    expect(all.endpointId).toBeNull();
    const n = (d: { attempts: number }[]) => d.reduce((s, b) => s + b.attempts, 0);
    expect(n(all.data)).toBeGreaterThanOrEqual(rows.length + 1);
    const { key } = await createApiKey(h.db.pool, { role: "app", appId });
    const mine = (await get("hours=1", key)).body;
    expect(mine.appId).toBe(appId);
    expect(n(mine.data)).toBe(rows.length);
    expect((await get(`endpoint_id=${other.id}`, key)).status).toBe(404);
    expect((await get(`app_id=${other.appId}`, key)).status).toBe(404);
    expect((await get("hours=0")).status).toBe(422);
    expect((await get("bucket_minutes=61")).status).toBe(422);
  });

  test("is in the OpenAPI document", async () => {
    const doc = (await h.api.inject({ method: "GET", url: "/docs/json" })).json();
    expect(doc.paths["/api/v1/stats/buckets"].get).toBeDefined();
  });
});

describe("/metrics", () => {
  test("hookrelay_alerts_open counts open alerts by kind, 0 for kinds with none", async () => {
    const appId = await newApp(h);
    const ep = await newEndpoint(h, appId);
    await h.db.pool.query(
      "update endpoint_health set circuit_state = 'open', opened_at = now() where endpoint_id = $1",
      [ep.id],
    );
    await syncAlerts(h.db.pool, h.config);
    const text = (await h.api.inject({ method: "GET", url: "/metrics" })).body;
    expect(text).toContain("# TYPE hookrelay_alerts_open gauge");
    expect(text).toMatch(/^hookrelay_alerts_open\{kind="circuit_open"\} 1$/m);
    expect(text).toMatch(/^hookrelay_alerts_open\{kind="endpoint_gone"\} 0$/m);
  });
});

describe("a latency window shorter than a day", () => {
  test("the dashboard offers only the ranges the window holds, and its charts load", async () => {
    const short = await startHarness({
      health: { ...testConfig().health, windowMs: 3 * 3_600_000 },
    });
    try {
      const c = dashboardClient(short.api);
      await c.signIn(short.adminKey);
      const page = await c.get("/dashboard");
      expect(page.statusCode).toBe(200);
      expect(page.body).toContain("Last hour");
      expect(page.body).not.toContain("hours=24");
      expect(page.body).not.toContain("hours=6");
      const src = /data-src="([^"]+)"/.exec(page.body)![1]!.replaceAll("&amp;", "&");
      expect(src).toContain("hours=1");
      expect((await c.get(src)).statusCode).toBe(200);
      // a range the window does not hold, asked for by hand, falls back to one it does
      expect((await c.get("/dashboard?hours=24")).body).toContain("Last hour");
    } finally {
      await short.close();
    }
  });
});

// Last in the file: it moves the rollup's mark ahead of the clock.
describe("the rollup and transactions still open", () => {
  test("an attempt committed after the rollup ran is still counted: the mark waits for the open transaction", async () => {
    const pool = h.db.pool;
    const ep = await newEndpoint(h, await newApp(h));
    const counted = async () =>
      (
        await pool.query(
          "select coalesce(sum(success + failure), 0)::int as n from chart_counts where scope = $1 and span = 1",
          [`ep:${ep.id}`],
        )
      ).rows[0].n;
    // a result write that waits (on a lock, a slow disk) with its attempt inserted, uncommitted
    const slow = await pool.connect();
    try {
      await slow.query("begin");
      await insertAttempts(slow as unknown as Pool, ep, [{ agoMs: 0, ms: 12, status: 200 }]);
      // a mark two minutes ahead of the clock would take the attempt's minute, but it must
      // stop at the open transaction's start
      await rollUpCharts(pool, { keepMs: 25 * 3_600_000, settleMs: -120_000 });
      const { rows } = await pool.query(
        "select rolled_until <= (select min(xact_start) from pg_stat_activity where pid = $1) as held from chart_rollup_state",
        [(await slow.query("select pg_backend_pid() as pid")).rows[0].pid],
      );
      expect(rows[0].held).toBe(true);
      await slow.query("commit");
    } finally {
      slow.release();
    }
    expect(await counted()).toBe(0);
    await rollUpCharts(pool, { keepMs: 25 * 3_600_000, settleMs: -120_000 });
    expect(await counted()).toBe(1);
  });
});
