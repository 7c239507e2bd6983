/**
 * Headless Chromium for the dashboard's browser tests: Debian's `chromium` package
 * (/usr/bin/chromium, which .ci/run installs) driven by playwright-core. Tests run as root
 * on CI, where Chromium needs --no-sandbox.
 */
import { type Browser, type BrowserContext, chromium, type Page } from "playwright-core";

export const CHROMIUM = "/usr/bin/chromium";

const SHARED = Symbol.for("hookrelay.test.chromium");
type Holder = { [SHARED]?: Promise<Browser> };

function startChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"],
  });
}

/**
 * One Chromium per test process (vitest runs file after file in a process; see
 * vitest.config.ts), started by the first file that asks and started again if it died.
 * Kept on globalThis so it survives a reloaded module graph. Playwright ends it when the
 * process exits.
 */
async function sharedChromium(): Promise<Browser> {
  const holder = globalThis as Holder;
  const running = await holder[SHARED]?.catch(() => null);
  if (running?.isConnected()) return running;
  holder[SHARED] = startChromium();
  return holder[SHARED];
}

/**
 * A test file's browser: the process's shared Chromium, seen through a view whose
 * `close()` closes only the contexts this file opened (each file still starts from fresh
 * contexts: no cookies, storage or pages of another file), and whose `contexts()` lists
 * only those. Launching Chromium once per file cost more than most files' tests.
 */
export async function launchBrowser(): Promise<Browser> {
  const browser = await sharedChromium();
  const mine = new Set<BrowserContext>();
  const newContext: Browser["newContext"] = async (options) => {
    const context = await browser.newContext(options);
    mine.add(context);
    context.on("close", () => mine.delete(context));
    return context;
  };
  const own: Partial<Browser> = {
    newContext,
    async newPage(options) {
      const context = await newContext(options);
      const page = await context.newPage();
      page.on("close", () => void context.close().catch(() => undefined));
      return page;
    },
    contexts: () => [...mine],
    async close() {
      await Promise.all([...mine].map((context) => context.close().catch(() => undefined)));
    },
  };
  return new Proxy(browser, {
    get(target, prop) {
      if (Object.hasOwn(own, prop)) return own[prop as keyof Browser];
      const value = Reflect.get(target, prop, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
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

/** Resolves when every chart on the page is drawn, empty (said in words) or failed. */
export async function chartsDrawn(page: Page): Promise<void> {
  await page.waitForFunction(() =>
    Array.from(document.querySelectorAll("[data-chart]")).every((el) =>
      ["drawn", "empty", "error"].includes(el.getAttribute("data-state") ?? ""),
    ),
  );
}

/** What chartMarks reads of a chart: its canvas and uPlot's plot area over it. */
interface ChartElement {
  querySelector(selector: string): BoxElement | null;
}
interface BoxElement {
  getBoundingClientRect(): { left: number; top: number; width: number; height: number };
}
interface CanvasElement extends BoxElement {
  width: number;
  getContext(kind: "2d"): {
    getImageData(x: number, y: number, w: number, h: number): { data: ArrayLike<number> };
  };
}

/**
 * Waits until every chart on the page is drawn; returns, per chart, how many pixels of its
 * plot area are drawn in colour: a series' line or point marker (the grid, the axes and the
 * background are grey, white or black). 0 for a chart without a canvas.
 */
export async function chartMarks(page: Page): Promise<number[]> {
  await chartsDrawn(page);
  return page.evaluate(() =>
    Array.from(document.querySelectorAll("[data-chart]")).map((chart) => {
      const el = chart as unknown as ChartElement;
      const canvas = el.querySelector("canvas") as CanvasElement | null;
      const over = el.querySelector(".u-over");
      if (!canvas || !over) return 0;
      const c = canvas.getBoundingClientRect();
      const o = over.getBoundingClientRect();
      const scale = canvas.width / c.width;
      const x = Math.round((o.left - c.left) * scale);
      const y = Math.round((o.top - c.top) * scale);
      const w = Math.max(1, Math.round(o.width * scale));
      const h = Math.max(1, Math.round(o.height * scale));
      const px = canvas.getContext("2d").getImageData(x, y, w, h).data;
      let coloured = 0;
      for (let i = 0; i < px.length; i += 4) {
        const [r, g, b, a] = [px[i]!, px[i + 1]!, px[i + 2]!, px[i + 3]!];
        if (a > 100 && Math.max(r, g, b) - Math.min(r, g, b) > 60) coloured++;
      }
      return coloured;
    }),
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
