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

/** Waits until every chart on the page is drawn; returns each chart's count of buckets with data. */
export async function chartPoints(page: Page): Promise<number[]> {
  await page.waitForFunction(() =>
    [...document.querySelectorAll("[data-chart]")].every(
      (el) =>
        el.getAttribute("data-state") === "drawn" || el.getAttribute("data-state") === "error",
    ),
  );
  return page.$$eval("[data-chart]", (els) =>
    els.map((el) => Number(el.getAttribute("data-points") ?? "-1")),
  );
}
