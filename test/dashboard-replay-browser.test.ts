/**
 * The dashboard's "Replay" action in headless Chromium (test/helpers/browser.ts) at the
 * default viewport: the form on the endpoint page is visible and fits, "Count first" shows
 * the count, "Start replay" opens the progress view, which htmx refreshes by itself until a
 * replay runner has finished the task; cancel asks first and cancels. No script error or
 * CSP violation on the way. A screenshot of the counted form goes to /tmp/replay.png.
 */
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, expect, test } from "vitest";
import { silentLogger } from "../src/logger.ts";
import { makeReplayRunner } from "../src/ops/replay-runner.ts";
import { launchBrowser, sidewaysOverflow, signIn, watchPage } from "./helpers/browser.ts";
import { type Harness, startHarness } from "./helpers/harness.ts";
import { seedMessages } from "./helpers/replay-seed.ts";
import { HOUR, MIN, newApp, newEndpoint } from "./helpers/seeded-deliveries.ts";

let h: Harness;
let browser: Browser;
let base: string;

beforeAll(async () => {
  h = await startHarness();
  await h.api.listen({ host: "127.0.0.1", port: 0 });
  const address = h.api.server.address();
  base = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
  browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
  await h?.close();
});

/** An endpoint with a dead letter and a failed delivery, 10 minutes old. */
async function endpointWithFailures() {
  const app = await newApp(h);
  const ep = await newEndpoint(h, app, { rateLimit: 5 });
  const createdAt = new Date(Date.now() - 10 * MIN);
  await seedMessages(h.db.pool, app, ep.id, [
    { status: "dead_letter", code: 500, createdAt },
    { status: "failed", code: 503, createdAt },
  ]);
  return `${base}/dashboard/endpoints/${ep.id}`;
}

const sinceHourAgo = () => new Date(Date.now() - HOUR).toISOString().slice(0, 16);

async function openPage(): Promise<{ page: Page; problems: string[] }> {
  // the default viewport (1,280 x 720)
  const page = await (await browser.newContext()).newPage();
  const problems = watchPage(page);
  await signIn(page, base, h.adminKey);
  return { page, problems };
}

test("the form is visible and usable: count, start, progress refreshed by itself to finished", async () => {
  const url = await endpointWithFailures();
  const { page, problems } = await openPage();
  await page.goto(url);
  await page.click("text=Replay…");
  const form = page.locator('[data-testid="replay-form"]');
  expect(await form.isVisible()).toBe(true);
  expect(await sidewaysOverflow(page)).toBe(0);
  await form.locator('input[name="kind"][value="recover"]').check();
  await form.locator('input[name="since"]').fill(sinceHourAgo());
  await Promise.all([page.waitForURL(`${url}/replay`), form.locator("text=Count first").click()]);
  const counted = page.locator('[data-testid="replay-count"]');
  expect(await counted.textContent()).toMatch(/2 deliveries would be sent, at 5 per second/);
  expect(await sidewaysOverflow(page)).toBe(0);
  await page.screenshot({ path: "/tmp/replay.png", fullPage: true });

  await Promise.all([
    page.waitForURL(/\/replay\/qtask_/),
    page.locator('[data-testid="replay-form"] >> text=Start replay').click(),
  ]);
  expect(await page.getAttribute('[data-testid="task-progress"]', "data-status")).toBe("running");
  // a runner picks the task up; the open page shows it finish without a reload
  const runner = makeReplayRunner({
    pool: h.db.pool,
    logger: silentLogger,
    defaultMaxAttempts: h.config.delivery.maxAttempts,
    pollIntervalMs: 50,
  });
  runner.start();
  try {
    await page.waitForSelector('[data-testid="task-progress"][data-status="finished"]', {
      timeout: 30_000,
    });
  } finally {
    await runner.stop();
  }
  expect(await page.textContent('[data-testid="task-done"]')).toMatch(/2 of 2/);
  expect(problems).toEqual([]);
});

test("cancel asks first, then cancels the running replay", async () => {
  const url = await endpointWithFailures();
  const { page, problems } = await openPage();
  await page.goto(`${url}/replay`);
  await page.fill('input[name="since"]', sinceHourAgo());
  await Promise.all([page.waitForURL(/\/replay\/qtask_/), page.click("text=Start replay")]);
  page.once("dialog", (dialog) => dialog.accept());
  await Promise.all([page.waitForURL(/done=canceled/), page.click("text=Cancel replay")]);
  expect(await page.getAttribute('[data-testid="task-progress"]', "data-status")).toBe("canceled");
  expect(await page.isVisible("text=Replay canceled")).toBe(true);
  expect(problems).toEqual([]);
});
