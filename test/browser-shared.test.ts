/**
 * The browser tests share one Chromium per test process (test/helpers/browser.ts): each
 * file's view opens its own contexts, and closing a view closes only those, never the
 * Chromium the next file uses.
 */
import { afterAll, expect, test } from "vitest";
import { launchBrowser } from "./helpers/browser.ts";

const first = await launchBrowser();
const second = await launchBrowser();
afterAll(async () => {
  await first.close();
  await second.close();
});

test("closing one file's browser closes its contexts and leaves Chromium to the next file", async () => {
  const gone = await first.newContext();
  const kept = await second.newContext();
  expect(first.contexts()).toEqual([gone]);
  expect(second.contexts()).toEqual([kept]);

  await first.close();
  expect(first.contexts()).toEqual([]);
  expect(first.isConnected()).toBe(true); // the shared Chromium, not closed with the view
  expect(second.isConnected()).toBe(true);
  const page = await kept.newPage();
  await page.setContent("<p>still here</p>");
  expect(await page.textContent("p")).toBe("still here");

  // a view opened after another was closed gets the same, still running Chromium
  const third = await launchBrowser();
  expect(third.isConnected()).toBe(true);
  expect(third.version()).toBe(second.version());
  await third.close();
});
