/**
 * The tenant portal in a real browser (headless Chromium, test/helpers/browser.ts) against
 * a listening API and a worker delivering to a real receiver on 127.0.0.1: the svix
 * client's appPortalAccess link opens the portal (the token leaves the address bar); a
 * customer adds an endpoint, reveals its secret, and the next message arrives there signed
 * with it; app B's endpoint is unreachable; hostile strings in a description render as
 * text; the link expires; the pages work from the keyboard and fit 1,280 px and a phone;
 * the page loads fast (the figure is printed).
 */
import type { AddressInfo } from "node:net";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { Webhook } from "standardwebhooks";
import { Svix } from "svix";
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "vitest";
import { portalSecretHash } from "../src/security/portal-token.ts";
import {
  chartsDrawn,
  focusedText,
  launchBrowser,
  sidewaysOverflow,
  watchPage,
} from "./helpers/browser.ts";
import { type Harness, startHarness } from "./helpers/harness.ts";
import { type Receiver, startReceiver, waitFor } from "./helpers/receiver.ts";

const SCRIPT = "<script>alert('xss')</script>";
/** the endpoint form's delivery settings (method, token, success rule, signing), one of its folded sections */
const DELIVERY = "details.settings:has(select[name=method])";
const IMG = `"><img src=x onerror="alert('xss')">`;

let h: Harness;
let rx: Receiver;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let problems: string[];
let base: string;
let svix: Svix;
let appA: string;
let epB: string;

beforeAll(async () => {
  h = await startHarness();
  rx = await startReceiver();
  await h.api.listen({ host: "127.0.0.1", port: 0 });
  base = `http://127.0.0.1:${(h.api.server.address() as AddressInfo).port}`;
  svix = new Svix(h.adminKey, { serverUrl: base });
  appA = (await svix.application.create({ name: "Acme" })).id;
  const appB = (await svix.application.create({ name: "Bravo" })).id;
  epB = (await svix.endpoint.create(appB, { url: `${rx.url}/bravo`, description: "B's" })).id;
  await svix.eventType.create({ name: "order.paid", description: "An order was paid" });
  h.startWorker();
  browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
  await h?.close();
  await rx?.close();
});
beforeEach(async () => {
  context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  page = await context.newPage();
  problems = watchPage(page);
  return async () => {
    await context.close();
    expect(problems).toEqual([]);
  };
});

/** Opens the link as a customer's browser would; the page is then on the endpoint list. */
async function open(url: string): Promise<void> {
  await Promise.all([page.waitForURL(`${base}/portal/endpoints`), page.goto(url)]);
}

describe("the portal in Chromium", () => {
  test("the link opens the portal; a customer adds an endpoint and the next message arrives there, signed", async () => {
    const { url } = await svix.authentication.appPortalAccess(appA, {});
    const started = Date.now();
    await open(url);
    const openMs = Date.now() - started;
    // the token is gone from the address bar and from history
    expect(page.url()).not.toContain("token");
    expect(await page.evaluate("history.length")).toBeLessThanOrEqual(2);
    await expect(page.locator("h1").textContent()).resolves.toBe("Endpoints");

    await page.click("text=Add endpoint");
    await page.fill("input[name=url]", `${rx.url}/customer`);
    await page.fill("input[name=description]", `hostile ${SCRIPT} ${IMG}`);
    await page.check('input[name=eventTypes][value="order.paid"]');
    await Promise.all([page.waitForURL(/\/portal\/endpoints\/ep_/), page.click("text=Save")]);
    await expect(page.locator(".notice").textContent()).resolves.toBe("Endpoint added.");
    // the hostile description is text, not markup (and no dialog opened: watchPage)
    await expect(page.locator("dl.facts").textContent()).resolves.toContain(
      `hostile ${SCRIPT} ${IMG}`,
    );
    expect(await page.locator("main img").count()).toBe(0);
    expect(await page.locator("main script").count()).toBe(0);

    await page.click("button:has-text('Reveal')");
    const secret = (await page.locator("pre[data-secret]").textContent())!.trim();
    expect(secret).toMatch(/^whsec_/);

    await svix.message.create(appA, { eventType: "order.paid", payload: { order: 1 } });
    await waitFor(() => rx.on("/customer").length === 1, 15_000, "the customer's delivery");
    const got = rx.on("/customer")[0]!;
    const verified = new Webhook(secret).verify(got.body, got.headers as Record<string, string>);
    expect(verified).toEqual({ order: 1 });

    // and the delivery log shows it with its attempt
    await page.click("nav >> text=Delivery log");
    await page.click("tbody a >> nth=0");
    await waitFor(
      async () => {
        await page.reload();
        return ((await page.locator(".timeline li").count()) ?? 0) > 0;
      },
      10_000,
      "the attempt on the page",
    );
    await expect(page.locator("section.delivery h3").textContent()).resolves.toContain("delivered");
    // (a string, evaluated in the page: the tests are type-checked without the DOM library)
    const nav = Number(
      await page.evaluate(
        "(performance.getEntriesByType('navigation')[0] || { loadEventEnd: -1, startTime: 0 }).loadEventEnd",
      ),
    );
    console.log(
      `portal: link to endpoint list ${openMs} ms; message page load ${Math.round(nav)} ms`,
    );
  });

  test("a customer sets up a GET postback with a token, a success rule and Ed25519 in the form", async () => {
    const { url } = await svix.authentication.appPortalAccess(appA, {});
    await open(url);
    await page.click("text=Add endpoint");
    await page.fill(
      "input[name=url]",
      `${rx.url}/postback/{$token}?cid={click_id}&amount={sale.amount}`,
    );
    // the delivery settings are folded away until opened
    expect(await page.locator("select[name=method]").isVisible()).toBe(false);
    await page.click(`${DELIVERY} > summary`);
    await page.selectOption("select[name=method]", "GET");
    await page.fill("input[name=urlToken]", "k3y/with space");
    await page.fill("textarea[name=bodyNotContains]", "DUPLICATE");
    await page.selectOption("select[name=onFailure]", "permanent");
    await page.selectOption("select[name=signatureScheme]", "v1a");
    await Promise.all([page.waitForURL(/\/portal\/endpoints\/ep_/), page.click("text=Save")]);
    await expect(page.locator("[data-testid=delivery]").textContent()).resolves.toMatch(
      /^GET, no body; URL template, a missing field fails the delivery; URL token \*\*\*$/,
    );
    await expect(page.locator("[data-testid=success-rule]").textContent()).resolves.toBe(
      'a 2xx body must not contain "DUPLICATE"; otherwise a dead letter',
    );
    expect(await page.content()).not.toContain("k3y/with space");

    await svix.message.create(appA, {
      eventType: "order.paid",
      payload: { click_id: "abc", sale: { amount: 12.3 } },
    });
    const at = "/postback/k3y%2Fwith%20space?cid=abc&amount=12.3";
    await waitFor(() => rx.on(at).length === 1, 15_000, "the postback");
    expect(rx.on(at)[0]!.method).toBe("GET");
    expect(String(rx.on(at)[0]!.headers["webhook-signature"])).toMatch(/^v1a,/);

    // the edit form opens with the delivery settings shown and the token field empty
    await page.click("text=Edit");
    expect(await page.locator(DELIVERY).getAttribute("open")).not.toBeNull();
    expect(await page.inputValue("select[name=method]")).toBe("GET");
    expect(await page.inputValue("input[name=urlToken]")).toBe("");
    await page.fill("input[name=description]", "tracker");
    await Promise.all([page.waitForURL(/done=saved/), page.click("text=Save")]);
    await expect(page.locator("[data-testid=delivery]").textContent()).resolves.toContain(
      "URL token",
    );
  });

  test("app B's endpoint is unreachable from A's portal, and not listed", async () => {
    const { url } = await svix.authentication.appPortalAccess(appA, {});
    await open(url);
    expect(await page.content()).not.toContain(epB);
    const res = await page.goto(`${base}/portal/endpoints/${epB}`);
    expect(res?.status()).toBe(404);
    await expect(page.locator("p.error").textContent()).resolves.toBe("endpoint not found");
  });

  test("the link expires: the open portal says so, and the link opens nothing any more", async () => {
    const link = await svix.authentication.appPortalAccess(appA, { expiry: 60 });
    await open(link.url);
    // (no waiting: the expiry is moved into the past)
    await h.db.pool.query(
      "update portal_tokens set expires_at = now() - interval '1 second' where token_hash = $1",
      [portalSecretHash(link.token)],
    );
    const res = await page.reload();
    expect(res?.status()).toBe(401);
    await expect(page.locator("h1").textContent()).resolves.toBe("This link has expired");
    const fresh = await context.newPage();
    problems.push(...watchPage(fresh));
    await fresh.goto(link.url);
    await fresh.waitForSelector("#portal-status >> text=expired or was revoked");
  });

  test("keyboard and 1,280 px: Tab reaches the skip link and the menu, Enter follows a link, nothing scrolls sideways", async () => {
    const { url } = await svix.authentication.appPortalAccess(appA, {});
    await open(url);
    expect(await sidewaysOverflow(page)).toBeLessThanOrEqual(0);
    await page.keyboard.press("Tab");
    await expect(focusedText(page)).resolves.toBe("Skip to content");
    const reached: string[] = [];
    for (let i = 0; i < 8 && reached.at(-1) !== "Delivery log"; i++) {
      await page.keyboard.press("Tab");
      reached.push(await focusedText(page));
    }
    expect(reached).toContain("Endpoints");
    expect(reached.at(-1)).toBe("Delivery log");
    await Promise.all([page.waitForURL(`${base}/portal/messages`), page.keyboard.press("Enter")]);
    await expect(page.locator("h1").textContent()).resolves.toBe("Delivery log");
    expect(await sidewaysOverflow(page)).toBeLessThanOrEqual(0);
  });

  test("on a phone the endpoint list, an endpoint's page and its form fit the screen", async () => {
    const phone = await browser.newContext({
      viewport: { width: 390, height: 844 },
      isMobile: true,
    });
    const p = await phone.newPage();
    problems.push(...watchPage(p));
    const { url } = await svix.authentication.appPortalAccess(appA, {});
    await Promise.all([p.waitForURL(`${base}/portal/endpoints`), p.goto(url)]);
    const overflow = async () =>
      Number(await p.evaluate("document.documentElement.scrollWidth - window.innerWidth"));
    expect(await overflow()).toBeLessThanOrEqual(1);
    const ep = await svix.endpoint.create(appA, { url: `${rx.url}/phone`, description: "phone" });
    await p.goto(`${base}/portal/endpoints/${ep.id}`);
    await chartsDrawn(p);
    expect(await overflow()).toBeLessThanOrEqual(1);
    await p.goto(`${base}/portal/endpoints/${ep.id}/edit`);
    // every folded section opened (delivery, egress, OAuth2), one at a time, first to last
    const folded = p.locator("details.settings:not([open]) > summary");
    expect(await folded.count()).toBeGreaterThan(1);
    for (let n = await folded.count(); n > 0; n--) await folded.first().click();
    expect(await overflow()).toBeLessThanOrEqual(1);
    await phone.close();
  });
});
