/**
 * The dashboard in a real browser (headless Chromium, test/helpers/browser.ts) against a
 * listening API and a worker delivering to real receivers: sign-in, charts drawn from real
 * deliveries, app-key scoping, a failing endpoint's open circuit and the requeue of its
 * dead letters from the page, message lookup, hostile strings rendered as text, CSRF
 * refusal, and the layout at 1,280 px and on a phone.
 */
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "vitest";
import { createApiKey } from "../src/api/auth.ts";
import { apiCalls, unique, V1 } from "./helpers/api-calls.ts";
import {
  chartPoints,
  focusedText,
  launchBrowser,
  sidewaysOverflow,
  signIn,
  watchPage,
} from "./helpers/browser.ts";
import { type Harness, startHarness } from "./helpers/harness.ts";
import { type Receiver, startReceiver, waitFor } from "./helpers/receiver.ts";

let h: Harness;
let rx: Receiver;
let browser: Browser;
let base: string;
let page: Page;
let problems: string[];
/** the failing receiver path answers 500 until this is set */
let healed = false;
const { createApp, createEndpoint, sendMessage } = apiCalls(() => ({ h, rx }));

const SCRIPT = "<script>alert('xss')</script>";
const IMG = `"><img src=x onerror="alert('xss')">`;

let appA: { id: string };
let appB: { id: string };
let epA: { id: string };
let epFailing: { id: string; url: string };
let epB: { id: string };

beforeAll(async () => {
  rx = await startReceiver((req) => ({
    status: req.path.startsWith("/fail") && !healed ? 500 : 200,
  }));
  h = await startHarness({ delivery: { maxAttempts: 2 } as never });
  await h.api.listen({ host: "127.0.0.1", port: 0 });
  const address = h.api.server.address();
  base = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
  appA = await createApp({ name: "Acme" });
  appB = await createApp({ name: "Bravo" });
  epA = await createEndpoint(appA.id, { description: `hostile ${SCRIPT} ${IMG}` });
  epFailing = await createEndpoint(appA.id, {
    url: `${rx.url}/fail/${unique("x")}`,
    // 4 messages x 2 attempts: the last failure opens the circuit, all 4 are dead by then
    failureThreshold: 8,
  });
  epB = await createEndpoint(appB.id);
  h.startWorker();
  for (let i = 0; i < 4; i++) {
    await sendMessage(appA.id, {
      eventType: "order.paid",
      eventId: `order-${i}`,
      payload: { i, note: `${SCRIPT}${IMG}` },
    });
  }
  await sendMessage(appB.id, { eventType: "order.paid", payload: { b: true } });
  await waitFor(async () => {
    const { rows } = await h.db.pool.query(
      "select count(*)::int as n from deliveries where status not in ('delivered', 'dead_letter')",
    );
    return rows[0].n === 0;
  });
  browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
  await h?.close();
  await rx?.close();
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

describe("dashboard in Chromium", () => {
  test("an admin key signs in and sees the overview with non-empty charts", async () => {
    const chartFetches: string[] = [];
    page.on("request", (r) => {
      if (r.url().includes("/dashboard/chart-data")) chartFetches.push(r.url());
    });
    await signIn(page, base, h.adminKey);
    await expect(page.locator("h1").textContent()).resolves.toBe("Overview");
    const points = await chartPoints(page);
    expect(points).toHaveLength(2);
    for (const n of points) expect(n).toBeGreaterThan(0);
    // both charts read one URL: one fetch; the summary's refresh (an htmx swap) draws nothing again
    expect(chartFetches).toHaveLength(1);
    await page.evaluate(
      "htmx.trigger(document.querySelector('#summary'), 'every 30s') || htmx.ajax('GET', location.href, { target: '#summary', select: '#summary', swap: 'outerHTML' })",
    );
    await page.waitForFunction("document.querySelector('#summary') !== null");
    await page.waitForTimeout(500);
    expect(chartFetches).toHaveLength(1);
    expect(await page.locator("[data-chart] canvas").count()).toBe(2);
    // uPlot drew into a canvas of the panel's width
    const width = await page.$eval("[data-chart] canvas", (c) => Number(c.getAttribute("width")));
    expect(width).toBeGreaterThan(200);
    await expect(page.locator('[data-testid="summary"]').textContent()).resolves.toContain(
      "Oldest pending",
    );
  });

  test("an app key sees only its app's endpoints", async () => {
    const { key } = await createApiKey(h.db.pool, { role: "app", appId: appB.id });
    await signIn(page, base, key);
    await page.click("nav >> text=Endpoints");
    const links = await page.$$eval('[data-testid="endpoints"] tbody a', (as) =>
      as.map((a) => a.getAttribute("href")),
    );
    expect(links).toEqual([`/dashboard/endpoints/${epB.id}`]);
    const other = await page.goto(`${base}/dashboard/endpoints/${epA.id}`);
    expect(other?.status()).toBe(404);
  });

  test("filters and sorting replace the table in place, and the address follows", async () => {
    await signIn(page, base, h.adminKey);
    await page.goto(`${base}/dashboard/endpoints`);
    await page.evaluate(() => {
      (globalThis as { marker?: number }).marker = 1;
    });
    await page.selectOption("select[name=state]", "open");
    await page.waitForURL(/\/dashboard\/endpoints\?state=open/);
    await expect(page.locator('[data-testid="range"]').textContent()).resolves.toBe(
      "1–1 of 1 endpoints",
    );
    await page.click("th >> text=p95");
    await page.waitForURL(/sort=p95/);
    // the same document all along: htmx swapped the results, no page load happened
    expect(await page.evaluate(() => (globalThis as { marker?: number }).marker)).toBe(1);
    await page.goto(`${base}/dashboard/endpoints?state=open&sort=p95`);
    await expect(page.locator('[data-testid="range"]').textContent()).resolves.toBe(
      "1–1 of 1 endpoints",
    );
  });

  test("a failing endpoint shows its open circuit; its dead letters are requeued from the page and arrive", async () => {
    await signIn(page, base, h.adminKey);
    await page.goto(`${base}/dashboard/endpoints?state=open`);
    await page.click(`a[href="/dashboard/endpoints/${epFailing.id}"]`);
    await expect(page.locator('[data-testid="circuit"] .badge').textContent()).resolves.toBe(
      "open",
    );
    healed = true;
    const path = new URL(epFailing.url).pathname;
    const before = rx.on(path).length;
    // close the circuit, then requeue through the confirmation
    await page.click("button:has-text('Reset circuit')");
    await expect(page.locator(".notice").textContent()).resolves.toContain("Circuit reset");
    await page.click("a:has-text('Requeue dead letters')");
    const plan = await page.locator('[data-testid="requeue-plan"]').textContent();
    expect(plan).toContain("This requeues 4 dead letters");
    expect(plan).toContain("no rate limit");
    await page.click("button:has-text('Requeue 4')");
    await expect(page.locator(".notice").textContent()).resolves.toContain(
      "4 dead letters requeued",
    );
    await waitFor(() => rx.on(path).length >= before + 4, 15_000, "requeued deliveries");
    // every one of them delivered, and none left dead
    await waitFor(async () => {
      const { rows } = await h.db.pool.query(
        "select count(*) filter (where status = 'delivered')::int as delivered, count(*) filter (where status = 'dead_letter')::int as dead from deliveries where endpoint_id = $1",
        [epFailing.id],
      );
      return rows[0].delivered === 4 && rows[0].dead === 0;
    });
  });

  test("message lookup by eventId shows the attempts", async () => {
    await signIn(page, base, h.adminKey);
    await page.click("nav >> text=Message lookup");
    await page.fill("input[name=q]", "order-2");
    await page.press("input[name=q]", "Enter");
    await page.waitForSelector('[data-testid="message"]');
    const timelines = await page.$$eval('[data-testid="attempt-timeline"]', (ols) =>
      ols.map((ol) => ol.querySelectorAll("li").length),
    );
    // the healthy endpoint: one attempt; the failing one: two before it died (plus a requeue, if that test ran first)
    expect(timelines.sort()).toEqual(expect.arrayContaining([1]));
    expect(timelines.reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual(3);
    await expect(
      page.locator('[data-testid="attempt-timeline"] li').first().textContent(),
    ).resolves.toMatch(/#1 .*HTTP (200|500)/);
  });

  test('a payload and a description with <script> and "><img onerror> render as text', async () => {
    await signIn(page, base, h.adminKey);
    await page.goto(`${base}/dashboard/endpoints/${epA.id}`);
    await expect(page.locator('[data-testid="description"]').textContent()).resolves.toBe(
      `hostile ${SCRIPT} ${IMG}`,
    );
    await page.goto(`${base}/dashboard/messages?q=order-1`);
    const payload = await page.locator('[data-testid="payload"]').textContent();
    expect(payload).toContain(JSON.stringify(`${SCRIPT}${IMG}`).slice(1, -1));
    for (const url of [
      `/dashboard/endpoints/${epA.id}`,
      "/dashboard/messages?q=order-1",
      "/dashboard/endpoints",
    ]) {
      await page.goto(`${base}${url}`);
      expect(await page.$$("img")).toHaveLength(0);
      expect(await page.$$("main script")).toHaveLength(0);
    }
    // (an alert would have been recorded by watchPage and fail the test)
  });

  test("a session that ends while the overview is open: its next refresh goes to the sign-in page", async () => {
    await signIn(page, base, h.adminKey);
    await page.goto(`${base}/dashboard?hours=6`);
    await h.db.pool.query("delete from dashboard_sessions");
    await Promise.all([
      page.waitForURL(/\/dashboard\/sign-in\?next=/),
      // Not awaiting htmx's promise: the redirect it follows ends this page's context.
      page.evaluate(
        "void htmx.ajax('GET', location.href, { target: '#summary', select: '#summary', swap: 'outerHTML' })",
      ),
    ]);
    expect(new URL(page.url()).searchParams.get("next")).toBe("/dashboard?hours=6");
    await expect(page.locator("h1").textContent()).resolves.toBe("Sign in");
  });

  test("a state-changing request without the CSRF token is refused", async () => {
    await signIn(page, base, h.adminKey);
    const status = await page.evaluate(async (id) => {
      const res = await fetch(`/dashboard/endpoints/${id}/disable`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: "",
      });
      return res.status;
    }, epB.id);
    expect(status).toBe(403);
    const ep = await h.call("GET", `${V1}/app/${appB.id}/endpoint/${epB.id}`);
    expect(ep.body.disabled).toBe(false);
  });

  test("keyboard: the skip link and the sections are reachable with Tab", async () => {
    await signIn(page, base, h.adminKey);
    await page.keyboard.press("Tab");
    await expect(focusedText(page)).resolves.toBe("Skip to content");
    const reached: string[] = [];
    for (let i = 0; i < 6; i++) {
      await page.keyboard.press("Tab");
      reached.push(
        await page.evaluate<string>("document.activeElement?.textContent?.trim() ?? ''"),
      );
    }
    expect(reached).toEqual(
      expect.arrayContaining(["Endpoints", "Dead letters", "Message lookup"]),
    );
  });

  test("usable on a phone: no page scrolls sideways, the table scrolls in its own box", async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    await signIn(page, base, h.adminKey);
    for (const url of [
      "/dashboard",
      "/dashboard/endpoints",
      `/dashboard/endpoints/${epA.id}`,
      "/dashboard/dead-letters",
    ]) {
      await page.goto(`${base}${url}`);
      const overflow = await sidewaysOverflow(page);
      expect(overflow, url).toBeLessThanOrEqual(0);
    }
  });
});
