/**
 * Scenario 11: the dashboard (docs/dashboard.md, docs/performance.md).
 *
 * Chart data: one endpoint with 24 h of attempts at 100/s (8.64M rows; --quick: 5 min),
 * seeded with generate_series in the shape the result writer leaves them, rolled up by the
 * maintenance task (timed once), then GET /api/v1/stats/buckets for that endpoint and for
 * everything, through the API in-process; the figure is the median answer time (target
 * < 100 ms). The newest minutes come from the attempts themselves, as in production.
 *
 * Pages: 10,000 endpoints in 100 apps with health figures, and 1,000,000 deliveries (and
 * their messages; 90% delivered, 5% dead, 4% pending, 1% awaiting retry; --quick: 50 and
 * 2,000). Each page is timed as the server answers it (inject, signed in), and, where
 * /usr/bin/chromium exists, as a browser loads it until its charts are drawn (target
 * < 1 s).
 */
import { existsSync } from "node:fs";
import type { FastifyInstance } from "fastify";
import { createApiKey, makeAuthenticator, makeKeyChecker } from "../../src/api/auth.ts";
import { loadConfig } from "../../src/config.ts";
import { buildHttpApp } from "../../src/http-app.ts";
import { silentLogger } from "../../src/logger.ts";
import { rollUpCharts } from "../../src/ops/chart-rollup.ts";
import { makeMetrics } from "../../src/ops/metrics.ts";
import { makeEnqueueBatcher } from "../../src/queue/enqueue-batcher.ts";
import { makeRedactor } from "../../src/security/redact.ts";
import { makeSecretBox } from "../../src/security/secret-box.ts";
import { makeSsrfGuard } from "../../src/security/ssrf-guard.ts";
import { chartsDrawnWithoutError } from "../../test/helpers/browser.ts";
import type { BenchContext, FreshDb } from "../lib/context.ts";
import { median, nowMs } from "../lib/stats.ts";

export interface DashboardData {
  db: FreshDb;
  chartEndpointId: string;
  pageEndpointId: string;
  attempts: number;
  endpoints: number;
  deliveries: number;
  seedMs: number;
  rollupMs: number;
}

export interface DashboardRun {
  chartEndpointMs: number;
  chartAllMs: number;
  /** server answer time per page (ms) */
  server: Record<string, number>;
  /** browser load until the charts are drawn (ms), when Chromium is there */
  browser: Record<string, number> | null;
}

const CHART_RATE = 100;
const CHROMIUM = "/usr/bin/chromium";

export async function prepareDashboard(ctx: BenchContext): Promise<DashboardData> {
  const quick = ctx.opts.quick;
  const db = await ctx.freshDb("dashboard");
  const t0 = nowMs();
  const endpoints = quick ? 50 : 10_000;
  const deliveries = quick ? 2_000 : 1_000_000;
  const chartSeconds = quick ? 5 * 60 : 24 * 3600;
  const pool = db.pool;
  await pool.query(
    `insert into applications (id, uid, name)
     select 'app_bench' || g, 'bench-' || g, 'Bench app ' || g from generate_series(0, 99) g`,
  );
  // health figures spread out, so sorting by them means something
  await pool.query(
    `insert into endpoints (id, app_id, url, description)
     select 'ep_bench' || lpad(g::text, 6, '0'), 'app_bench' || (g % 100),
            'https://receiver-' || g || '.example/hooks?token=t' || g, 'endpoint ' || g
     from generate_series(0, $1::int - 1) g`,
    [endpoints],
  );
  await pool.query(
    `update endpoint_health set p50_ms = 20 + (hashtext(endpoint_id) & 255),
            p95_ms = 100 + (hashtext(endpoint_id) & 2047), p99_ms = 200 + (hashtext(endpoint_id) & 4095),
            samples = 1000, success_rate = 0.9 + ((hashtext(endpoint_id) & 99) / 1000.0),
            circuit_state = case when hashtext(endpoint_id) % 97 = 0 then 'open' else 'closed' end`,
  );
  const chunk = 200_000;
  for (let start = 0; start < deliveries; start += chunk) {
    const n = Math.min(chunk, deliveries - start);
    await pool.query(
      `insert into messages (id, app_id, event_type, event_id, payload, created_at)
       select 'msg_bench' || lpad(g::text, 8, '0'), 'app_bench' || (g % $3::int % 100), 'order.paid',
              'evt-' || g, '{"order":' || g || '}', now() - (g % 86400) * interval '1 second'
       from generate_series($1::int, $1::int + $2::int - 1) g`,
      [start, n, endpoints],
    );
    await pool.query(
      `insert into deliveries (message_id, endpoint_id, app_id, status, attempt_count, max_attempts,
                               next_attempt_at, created_at, updated_at, last_status_code)
       select 'msg_bench' || lpad(g::text, 8, '0'), 'ep_bench' || lpad((g % $3::int)::text, 6, '0'),
              'app_bench' || (g % $3::int % 100),
              case when g % 100 < 90 then 'delivered' when g % 100 < 95 then 'dead_letter'
                   when g % 100 < 99 then 'pending' else 'failed' end,
              1, 5, now() + interval '1 hour', now() - (g % 86400) * interval '1 second',
              now() - (g % 86400) * interval '1 second', case when g % 100 < 90 then 200 else 503 end
       from generate_series($1::int, $1::int + $2::int - 1) g`,
      [start, n, endpoints],
    );
  }
  // the chart endpoint: 100 attempts a second over the window, latency with a daily shape
  const chartEndpointId = "ep_bench000000";
  const step = 3600 * CHART_RATE;
  for (let start = 0; start < chartSeconds * CHART_RATE; start += step) {
    const n = Math.min(step, chartSeconds * CHART_RATE - start);
    await pool.query(
      `insert into attempts (delivery_id, message_id, endpoint_id, app_id, attempt_number, trigger,
                             url, started_at, latency_ms, outcome, status_code, created_at)
       select 1, 'msg_bench00000000', $3::text, 'app_bench0', 1, 'scheduled', 'https://x', t,
              (30 + (g % 97) * 3 + 400 * (g % 1000 = 0)::int)::int,
              case when g % 50 = 0 then 'failure' else 'success' end,
              case when g % 50 = 0 then 503 else 200 end, t
       from generate_series($1::bigint, $1::bigint + $2::bigint - 1) g,
            lateral (select now() - interval '${chartSeconds} seconds' + g * interval '${1000 / CHART_RATE} milliseconds' as t) x`,
      [start, n, chartEndpointId],
    );
  }
  await pool.query("vacuum (analyze) messages, deliveries, attempts, endpoints, endpoint_health");
  const seedMs = nowMs() - t0;
  // the rollup as the maintenance task runs it: from the migration's mark, a day back
  const r0 = nowMs();
  await rollUpCharts(pool, { keepMs: 25 * 3600_000, maxSteps: 100 });
  const rollupMs = nowMs() - r0;
  await pool.query("vacuum (analyze) chart_counts, chart_latency");
  return {
    db,
    chartEndpointId,
    pageEndpointId: "ep_bench000001",
    attempts: chartSeconds * CHART_RATE,
    endpoints,
    deliveries,
    seedMs,
    rollupMs,
  };
}

async function startApi(data: DashboardData): Promise<{ api: FastifyInstance; key: string }> {
  const config = loadConfig({}, { databaseUrl: data.db.url });
  const batcher = makeEnqueueBatcher(data.db.pool, config.delivery.maxAttempts);
  batcher.start();
  const checkKey = makeKeyChecker(data.db.pool, undefined);
  const api = await buildHttpApp({
    pool: data.db.pool,
    config,
    logger: silentLogger,
    ssrfGuard: makeSsrfGuard({ allowlist: [] }),
    secretBox: makeSecretBox(undefined, []),
    redactor: makeRedactor(config.sensitiveFields),
    metrics: makeMetrics({ pool: data.db.pool, maxEndpointLabels: 10 }),
    authenticate: makeAuthenticator(checkKey),
    checkKey,
    batcher,
  });
  api.addHook("onClose", () => batcher.stop());
  const { key } = await createApiKey(data.db.pool, { role: "admin" });
  return { api, key };
}

async function timed(times: number, fn: () => Promise<unknown>): Promise<number> {
  const ms: number[] = [];
  for (let i = 0; i < times; i++) {
    const t = nowMs();
    await fn();
    ms.push(nowMs() - t);
  }
  return median(ms);
}

/**
 * Times the chart queries and the pages, server-side and, where Chromium is installed and
 * `browser` is not false, in the browser.
 */
export async function measureDashboard(
  ctx: BenchContext,
  data: DashboardData,
  { browser: inBrowser = true }: { browser?: boolean } = {},
): Promise<DashboardRun> {
  const { api, key } = await startApi(data);
  try {
    const auth = { authorization: `Bearer ${key}` };
    const get = async (url: string, headers: Record<string, string>) => {
      const res = await api.inject({ method: "GET", url, headers });
      if (res.statusCode !== 200) throw new Error(`GET ${url}: ${res.statusCode}`);
      return res;
    };
    const n = ctx.opts.quick ? 1 : 15;
    const chartEndpointMs = await timed(n, () =>
      get(`/api/v1/stats/buckets?endpoint_id=${data.chartEndpointId}`, auth),
    );
    const chartAllMs = await timed(n, () => get("/api/v1/stats/buckets", auth));

    // sign in as a browser would
    const form = await api.inject({ method: "GET", url: "/dashboard/sign-in" });
    const signInCookie = String([form.headers["set-cookie"]].flat()[0]).split(";")[0]!;
    const csrf = /name="_csrf" value="([^"]+)"/.exec(form.body)![1]!;
    const signedIn = await api.inject({
      method: "POST",
      url: "/dashboard/sign-in",
      headers: { cookie: signInCookie, "content-type": "application/x-www-form-urlencoded" },
      payload: new URLSearchParams({ _csrf: csrf, key }).toString(),
    });
    const session = [signedIn.headers["set-cookie"]]
      .flat()
      .map((c) => String(c).split(";")[0]!)
      .find((c) => c.startsWith("hookrelay_session="))!;
    const pages: Record<string, string> = {
      overview: "/dashboard",
      endpoints: "/dashboard/endpoints",
      "endpoints by p95": "/dashboard/endpoints?sort=p95&dir=desc",
      "endpoints by backlog": "/dashboard/endpoints?sort=backlog&dir=desc",
      "endpoints, page 150": "/dashboard/endpoints?page=150",
      "endpoint detail": `/dashboard/endpoints/${data.chartEndpointId}`,
      "dead letters": "/dashboard/dead-letters",
      "message lookup": "/dashboard/messages?q=evt-123456",
    };
    const server: Record<string, number> = {};
    for (const [name, url] of Object.entries(pages)) {
      server[name] = await timed(n, () => get(url, { cookie: session }));
    }

    let browser: Record<string, number> | null = null;
    if (inBrowser && existsSync(CHROMIUM)) {
      await api.listen({ host: "127.0.0.1", port: 0 });
      const address = api.server.address();
      const base = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
      const { chromium } = await import("playwright-core");
      const b = await chromium.launch({
        executablePath: CHROMIUM,
        headless: true,
        args: ["--no-sandbox", "--disable-gpu"],
      });
      try {
        const context = await b.newContext({ viewport: { width: 1280, height: 900 } });
        const page = await context.newPage();
        await page.goto(`${base}/dashboard/sign-in`);
        await page.fill("#key", key);
        await Promise.all([
          page.waitForURL(`${base}/dashboard`),
          page.click("button[type=submit]"),
        ]);
        browser = {};
        for (const [name, url] of Object.entries(pages)) {
          // a fresh navigation each time; cached assets, as a returning operator has them
          browser[name] = await timed(ctx.opts.quick ? 1 : 5, async () => {
            await page.goto(`${base}${url}`, { waitUntil: "load" });
            await chartsDrawnWithoutError(page);
          });
        }
      } finally {
        await b.close();
      }
    }
    return { chartEndpointMs, chartAllMs, server, browser };
  } finally {
    await api.close();
  }
}
