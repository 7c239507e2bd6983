/**
 * The dashboard's message list in a real browser (headless Chromium): the filter form
 * narrows the list (the URL keeps the filters), the status column shows each message's
 * deliveries, and the export link downloads the filtered list as CSV.
 */
import { readFile } from "node:fs/promises";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, expect, test } from "vitest";
import { launchBrowser, signIn, watchPage } from "./helpers/browser.ts";
import { type Harness, startHarness } from "./helpers/harness.ts";
import { newApp, newEndpoint, seed, V1 } from "./helpers/seeded-deliveries.ts";

let h: Harness;
let browser: Browser;
let base: string;
let appId: string;
let paid: string;
let dead: string;

beforeAll(async () => {
  h = await startHarness();
  appId = await newApp(h);
  const ep = (await newEndpoint(h, appId)).id;
  dead = (await seed(h.db.pool, [{ endpointId: ep, status: "dead_letter" }]))[0]!.messageId;
  paid = (
    await h.call("POST", `${V1}/app/${appId}/msg`, {
      eventType: "order.paid",
      payload: { n: 1 },
      channels: ["eu"],
    })
  ).body.id;
  await h.api.listen({ host: "127.0.0.1", port: 0 });
  const address = h.api.server.address();
  base = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
  browser = await launchBrowser();
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await h?.close();
});

test("filter the list by status in the form, then download its CSV", async () => {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  const problems = watchPage(page);
  await signIn(page, base, h.adminKey);
  await page.click("nav >> text=Messages");
  await page.waitForSelector('[data-testid="message-list"]');
  const ids = () => page.locator('[data-testid="message-list"] tbody code').allTextContents();
  expect((await ids()).sort()).toEqual([paid, dead].sort());

  await page.selectOption('select[name="status"]', "dead_letter");
  await Promise.all([
    page.waitForURL(/status=dead_letter/),
    page.click("button:has-text('Filter')"),
  ]);
  expect(await ids()).toEqual([dead]);
  await expect(
    page.locator('[data-testid="message-status"] .badge.dead_letter').textContent(),
  ).resolves.toBe("dead letter 1");

  const [download] = await Promise.all([
    page.waitForEvent("download"),
    page.click('[data-testid="export-links"] >> text=CSV'),
  ]);
  const csv = await readFile((await download.path())!, "utf8");
  const lines = csv.trimEnd().split("\r\n");
  expect(lines[0]).toBe("id,timestamp,eventType,eventId,channels,tags,orderingKey,status");
  expect(lines.slice(1).map((l) => l.split(",")[0])).toEqual([dead]);
  expect(lines[1]).toMatch(/,dead_letter 1$/);
  await context.close();
  expect(problems).toEqual([]);
}, 60_000);
