/**
 * The layout of every portal and dashboard page in Chromium at 1,280 px and at a phone's
 * 390 px (test/helpers/layout-checks.ts): health cards whose labels and values stay apart,
 * forms whose fields, selects and checkboxes are not cut off or out of line, nothing
 * scrolling sideways; and the portal's test event, whose page follows the delivery until
 * it is final without a reload. Screenshots go to /tmp/layout-*.png.
 */
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { chartsDrawn, launchBrowser, signIn, watchPage } from "./helpers/browser.ts";
import { listenOnLoopback } from "./helpers/cli.ts";
import { deliveryCalls } from "./helpers/deliveries.ts";
import { type Harness, startHarness } from "./helpers/harness.ts";
import { layoutProblems } from "./helpers/layout-checks.ts";
import { type Receiver, startReceiver } from "./helpers/receiver.ts";

const V1 = "/api/v1";
let h: Harness;
let rx: Receiver;
let browser: Browser;
let base: string;
let appId: string;
let postback: string;
let failing: string;
let msgId: string;
/** the receiver's /slow path answers once this is set */
let release: (() => void) | null = null;
const { newApp, newEndpoint, send, waitForStatus } = deliveryCalls(() => h);
/** a short ordering key, which the blocked-keys table shows on one line */
const KEY = "customer-4242-eu";

beforeAll(async () => {
  rx = await startReceiver(async (req) => {
    if (req.path.startsWith("/slow")) await new Promise<void>((r) => (release = r));
    return { status: req.path.startsWith("/fail") ? 500 : 200 };
  });
  h = await startHarness({
    delivery: { maxAttempts: 1 } as never,
    // a declared pool (no endpoint names it), for the portal's Egress IPs table
    egress: {
      proxy: null,
      pools: {
        "eu-nat": {
          proxy: null,
          localAddress: null,
          publicIps: ["203.0.113.10", "203.0.113.11", "2001:db8:85a3::8a2e:370:7334"],
          description: "through the NAT gateway of the EU region",
        },
      },
    },
  });
  base = await listenOnLoopback(h.api);
  appId = await newApp();
  await h.call("POST", `${V1}/event-type`, {
    name: "order.paid",
    description: "An order was paid",
  });
  postback = await newEndpoint(appId, `${rx.url}/pb?payout={payout}&cid={click_id}`, {
    method: "GET",
    description: "Affiliate postback with a long description that wraps on a phone",
    eventTypes: ["order.paid"],
    successRule: { bodyNotContains: ["DUPLICATE"], ignoreCase: true, onFailure: "permanent" },
  });
  failing = await newEndpoint(appId, `${rx.url}/fail/orders`, { eventTypes: ["order.paid"] });
  h.startWorker();
  msgId = await send(appId, { payout: 501, click_id: "abc" }, { eventType: "order.paid" });
  await waitForStatus(msgId, postback, "delivered");
  await waitForStatus(msgId, failing, "dead_letter");
  // a blocked ordering key on the failing endpoint: its head dead, the next one waiting
  const head = await send(appId, { payout: 1 }, { eventType: "order.paid", orderingKey: KEY });
  await send(appId, { payout: 2 }, { eventType: "order.paid", orderingKey: KEY });
  await waitForStatus(head, failing, "dead_letter");
  browser = await launchBrowser();
});
afterAll(async () => {
  release?.();
  await browser?.close();
  await h?.close();
  await rx?.close();
});

const WIDTHS = [
  { name: "desktop", width: 1280, height: 900 },
  { name: "phone", width: 390, height: 844 },
] as const;

/** Opens the page, opens its folded settings, and reports its layout problems. */
async function check(page: Page, url: string, shot: string): Promise<string[]> {
  const res = await page.goto(`${base}${url}`);
  expect(res?.status(), url).toBe(200);
  await chartsDrawn(page);
  // one at a time, first to last: each click takes the opened one out of the selector
  const folded = page.locator("details:not([open]) > summary");
  for (let n = await folded.count(); n > 0; n--) await folded.first().click();
  await page.screenshot({ path: `/tmp/layout-${shot}.png`, fullPage: true });
  return (await layoutProblems(page)).map((p) => `${url}: ${p}`);
}

async function portalContext(viewport: { width: number; height: number }) {
  const context = await browser.newContext({ viewport });
  const page = await context.newPage();
  const link = await h.call("POST", `${V1}/auth/app-portal-access/${appId}`, {});
  await Promise.all([
    page.waitForURL(`${base}/portal/endpoints`),
    page.goto(`${base}/portal/#token=${link.body.token}`),
  ]);
  return { context, page };
}

describe.each(WIDTHS)("at $width px", (size) => {
  let context: BrowserContext | undefined;
  afterAll(async () => {
    await context?.close();
  });

  test("every portal page: cards, forms and tables laid out", async () => {
    const opened = await portalContext(size);
    context = opened.context;
    const { page } = opened;
    const problems = watchPage(page);
    const found: string[] = [];
    for (const [url, shot] of [
      ["/portal/endpoints", "portal-endpoints"],
      [`/portal/endpoints/${postback}`, "portal-endpoint"],
      [`/portal/endpoints/${postback}/edit`, "portal-edit"],
      [`/portal/endpoints/${failing}`, "portal-failing"],
      [`/portal/endpoints/${postback}/replay`, "portal-replay"],
      ["/portal/endpoints/new", "portal-new"],
      ["/portal/messages", "portal-messages"],
      ["/portal/messages?event_types=order.paid&status=pending", "portal-messages-filtered"],
      ["/portal/attempts", "portal-attempts"],
      [`/portal/messages/${msgId}`, "portal-message"],
      ["/portal/event-types", "portal-event-types"],
      ["/portal/egress", "portal-egress"],
    ] as const) {
      found.push(...(await check(page, url, `${shot}-${size.name}`)));
    }
    expect(found).toEqual([]);
    expect(problems).toEqual([]);
  });

  test("every dashboard page: cards, forms and tables laid out", async () => {
    const own = await browser.newContext({ viewport: size });
    const page = await own.newPage();
    const problems = watchPage(page);
    await signIn(page, base, h.adminKey);
    const found: string[] = [];
    for (const [url, shot] of [
      ["/dashboard", "dash-overview"],
      ["/dashboard/endpoints", "dash-endpoints"],
      [`/dashboard/endpoints/${postback}`, "dash-endpoint"],
      [`/dashboard/endpoints/${postback}/edit`, "dash-edit"],
      [`/dashboard/endpoints/${failing}`, "dash-failing"],
      [`/dashboard/endpoints/${failing}/requeue`, "dash-requeue"],
      [`/dashboard/endpoints/${postback}/replay`, "dash-replay"],
      ["/dashboard/dead-letters", "dash-dead-letters"],
      [`/dashboard/messages?q=${msgId}`, "dash-message"],
      ["/dashboard/message-list", "dash-message-list"],
      ["/dashboard/attempt-list", "dash-attempt-list"],
    ] as const) {
      found.push(...(await check(page, url, `${shot}-${size.name}`)));
    }
    await own.close();
    expect(found).toEqual([]);
    expect(problems).toEqual([]);
  });
});

describe("the portal's test event", () => {
  test("its page shows pending, then delivered, without a reload", async () => {
    const slow = await newEndpoint(appId, `${rx.url}/slow/test`, { eventTypes: ["order.paid"] });
    const { context, page } = await portalContext({ width: 1280, height: 900 });
    const problems = watchPage(page);
    await page.goto(`${base}/portal/endpoints/${slow}`);
    await Promise.all([
      page.waitForURL(/\/portal\/messages\/msg_/),
      page.click("button:has-text('Send')"),
    ]);
    await page.evaluate("window.sameDocument = 1");
    await expect(page.locator("#deliveries .badge").first().textContent()).resolves.toMatch(
      /pending|in flight/,
    );
    await expect(page.locator("#deliveries").getAttribute("data-refresh")).resolves.toBe("2");
    // the receiver answers now; the page follows by itself
    await expect.poll(() => release !== null, { timeout: 15_000 }).toBe(true);
    release!();
    await page.waitForSelector("#deliveries .badge.delivered", { timeout: 15_000 });
    expect(await page.evaluate("window.sameDocument")).toBe(1);
    // final: the refresh stops
    await expect(page.locator("#deliveries").getAttribute("hx-get")).resolves.toBeNull();
    await context.close();
    expect(problems).toEqual([]);
  });
});
