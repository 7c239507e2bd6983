/**
 * The charts show what happened (docs/dashboard.md, "Charts"), in headless Chromium
 * (test/helpers/browser.ts) against a listening API: with a few minutes of traffic (300
 * attempts at about 400 ms over the last 12 minutes) every chart at the DEFAULT range (24 h)
 * draws visible marks (coloured pixels of lines or point markers in its plot area, read
 * from the canvas), starts its time axis just before the first data and says so; a range
 * without attempts says so in words; the portal's endpoint chart has the range links and
 * reads the range it shows.
 */
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "vitest";
import type { Pool } from "../src/db/pool.ts";
import {
  chartMarks,
  chartPoints,
  chartsDrawn,
  launchBrowser,
  signIn,
  watchPage,
} from "./helpers/browser.ts";
import { listenOnLoopback } from "./helpers/cli.ts";
import { type Harness, startHarness } from "./helpers/harness.ts";
import { newApp, newEndpoint, V1 } from "./helpers/seeded-deliveries.ts";

let h: Harness;
let browser: Browser;
let base: string;
let page: Page;
let problems: string[];
let appId: string;
let busy: string;
let quiet: string;

/** `n` attempts of one endpoint spread over the last `minutes`, about `ms` each. */
async function recentAttempts(
  pool: Pool,
  ep: { id: string; appId: string },
  n: number,
  minutes: number,
  ms: number,
) {
  await pool.query(
    `insert into attempts (delivery_id, message_id, endpoint_id, app_id, attempt_number, trigger,
                           url, started_at, latency_ms, outcome, status_code, created_at)
     select 1, 'msg_x', $1::text, $2::text, 1, 'scheduled', 'http://x', now(),
            $5::int - 50 + (i * 37) % 100,
            case when i % 20 = 0 then 'failure' else 'success' end,
            case when i % 20 = 0 then 503 else 200 end,
            now() - (i::float8 / $3::int) * $4::int * interval '1 minute'
     from generate_series(1, $3::int) i`,
    [ep.id, ep.appId, n, minutes, ms],
  );
}

beforeAll(async () => {
  h = await startHarness();
  base = await listenOnLoopback(h.api);
  appId = await newApp(h);
  const ep = await newEndpoint(h, appId);
  busy = ep.id;
  quiet = (await newEndpoint(h, appId)).id;
  // 12 minutes fill at least three of the 24 h range's 5-minute buckets wherever the clock
  // stands, so each series draws lines. (Over 4 minutes, one time in five all of it fell in
  // one bucket: a lone point marker per series, 50-130 coloured pixels, below VISIBLE.)
  await recentAttempts(h.db.pool, ep, 300, 12, 400);
  browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
  await h?.close();
});
beforeEach(async () => {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  page = await context.newPage();
  problems = watchPage(page);
  return async () => {
    await context.close();
    expect(problems).toEqual([]);
  };
});

/** Each chart on the page draws at least this many coloured pixels in its plot area. */
const VISIBLE = 150;

describe("a few minutes of traffic at the default range (24 h)", () => {
  test("the overview's charts draw visible marks and start at the first data", async () => {
    await signIn(page, base, h.adminKey);
    expect(await page.locator("[data-testid=ranges] strong").textContent()).toBe("24 h");
    const marks = await chartMarks(page);
    expect(marks).toHaveLength(2);
    for (const n of marks) expect(n).toBeGreaterThanOrEqual(VISIBLE);
    const from = await page.$$eval("[data-chart]", (els) =>
      els.map((el) => el.getAttribute("data-from")),
    );
    for (const t of from) {
      // the axis starts within the last hour, not 24 hours ago
      expect(Date.now() - Date.parse(String(t))).toBeLessThan(3_600_000);
    }
    await expect(page.locator(".chart-note").first().textContent()).resolves.toMatch(
      /^Shown from .*, just before the first attempt in the last 24 hours\.$/,
    );
    // the unit is in the heading
    await expect(page.locator(".chart h3").nth(1).textContent()).resolves.toContain("in ms");
  });

  test("an endpoint's latency and status charts draw visible marks", async () => {
    await signIn(page, base, h.adminKey);
    await page.goto(`${base}/dashboard/endpoints/${busy}`);
    const marks = await chartMarks(page);
    expect(marks).toHaveLength(2);
    for (const n of marks) expect(n).toBeGreaterThanOrEqual(VISIBLE);
    // and at 1 h, 1-minute buckets: the same, without starting later
    await page.goto(`${base}/dashboard/endpoints/${busy}?hours=1`);
    for (const n of await chartMarks(page)) expect(n).toBeGreaterThanOrEqual(VISIBLE);
  });

  test("an endpoint without attempts says so instead of drawing empty axes", async () => {
    await signIn(page, base, h.adminKey);
    await page.goto(`${base}/dashboard/endpoints/${quiet}`);
    expect(await chartPoints(page)).toEqual([0, 0]);
    const states = await page.$$eval("[data-chart]", (els) =>
      els.map((el) => el.getAttribute("data-state")),
    );
    expect(states).toEqual(["empty", "empty"]);
    expect(await page.locator("[data-chart] canvas").count()).toBe(0);
    await expect(page.locator(".chart-note").first().textContent()).resolves.toBe(
      "No attempts in the last 24 hours: nothing to draw yet.",
    );
  });

  test("the portal's endpoint chart draws visible marks and offers the ranges", async () => {
    const link = await h.call("POST", `${V1}/auth/app-portal-access/${appId}`, {});
    await Promise.all([
      page.waitForURL(`${base}/portal/endpoints`),
      page.goto(`${base}/portal/#token=${link.body.token}`),
    ]);
    await page.goto(`${base}/portal/endpoints/${busy}`);
    const marks = await chartMarks(page);
    expect(marks).toHaveLength(1);
    expect(marks[0]).toBeGreaterThanOrEqual(VISIBLE);
    expect(await page.locator("[data-testid=ranges] strong").textContent()).toBe("24 h");
    const fetched: string[] = [];
    page.on("request", (r) => {
      if (r.url().includes("/chart-data")) fetched.push(r.url());
    });
    await Promise.all([
      page.waitForURL(/hours=1$/),
      page.click("[data-testid=ranges] >> text=1 h"),
    ]);
    await chartsDrawn(page);
    expect(fetched).toHaveLength(1);
    expect(new URL(fetched[0]!).searchParams.get("hours")).toBe("1");
    expect(new URL(fetched[0]!).searchParams.get("bucket_minutes")).toBe("1");
    await expect(page.locator("h2#h-latency").textContent()).resolves.toBe("Latency, last hour");
    expect((await chartMarks(page))[0]).toBeGreaterThanOrEqual(VISIBLE);
  });
});
