/**
 * Headless Chromium for the dashboard's browser tests: Debian's `chromium` package
 * (/usr/bin/chromium, which .ci/run installs) driven by playwright-core. Tests run as root
 * on CI, where Chromium needs --no-sandbox.
 */
import { type Browser, chromium, type Page } from "playwright-core";

export const CHROMIUM = "/usr/bin/chromium";

export function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"],
  });
}

/**
 * Everything a page reports that a dashboard page must never produce: script errors, CSP
 * violations, dialogs (an XSS payload that ran would open one).
 */
export function watchPage(page: Page): string[] {
  const problems: string[] = [];
  page.on("pageerror", (err) => problems.push(`pageerror: ${err.message}`));
  page.on("console", (msg) => {
    // (HTTP error statuses are the tests' to assert; CSP violations and script errors stay)
    if (msg.type() === "error" && !msg.text().startsWith("Failed to load resource"))
      problems.push(`console: ${msg.text()}`);
  });
  page.on("dialog", async (dialog) => {
    if (dialog.type() === "confirm") return; // the dashboard's own confirmations
    problems.push(`dialog: ${dialog.type()} ${dialog.message()}`);
    await dialog.dismiss();
  });
  return problems;
}

/** Signs in through the form with `key`; the page is then on the overview. */
export async function signIn(page: Page, baseUrl: string, key: string): Promise<void> {
  await page.goto(`${baseUrl}/dashboard/sign-in`);
  await page.fill("#key", key);
  await Promise.all([page.waitForURL(`${baseUrl}/dashboard`), page.click("button[type=submit]")]);
}

/**
 * The little of the page's DOM these helpers read. This project's TypeScript has no DOM
 * types; the functions below run in the page (Playwright sends their source), where
 * `document` is the real one. (Not strings: the dashboard's CSP forbids eval, which
 * Playwright would need for a string predicate.)
 */
interface PageElement {
  getAttribute(name: string): string | null;
  textContent: string | null;
}
declare const document: {
  querySelectorAll(selector: string): ArrayLike<PageElement>;
  activeElement: PageElement | null;
  documentElement: { scrollWidth: number; clientWidth: number };
};

/** Resolves when every chart on the page is drawn (or failed). */
export async function chartsDrawn(page: Page): Promise<void> {
  await page.waitForFunction(() =>
    Array.from(document.querySelectorAll("[data-chart]")).every((el) =>
      ["drawn", "error"].includes(el.getAttribute("data-state") ?? ""),
    ),
  );
}

/** Like chartsDrawn, but a chart that failed to load is an error (the benchmark's timing). */
export async function chartsDrawnWithoutError(page: Page): Promise<void> {
  await chartsDrawn(page);
  const failed = await page.evaluate(
    () =>
      Array.from(document.querySelectorAll("[data-chart]")).filter(
        (el) => el.getAttribute("data-state") === "error",
      ).length,
  );
  if (failed > 0) throw new Error(`${failed} chart(s) on ${page.url()} failed to load`);
}

/** Waits until every chart on the page is drawn; returns each chart's count of buckets with data. */
export async function chartPoints(page: Page): Promise<number[]> {
  await chartsDrawn(page);
  return page.evaluate(() =>
    Array.from(document.querySelectorAll("[data-chart]")).map((el) =>
      Number(el.getAttribute("data-points") ?? "-1"),
    ),
  );
}

/** The text of the focused element. */
export const focusedText = (page: Page): Promise<string> =>
  page.evaluate(() => document.activeElement?.textContent?.trim() ?? "");

/** How far the page scrolls sideways (0: it fits the viewport). */
export const sidewaysOverflow = (page: Page): Promise<number> =>
  page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
