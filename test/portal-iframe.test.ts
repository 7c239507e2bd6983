/**
 * The portal embedded in another site's iframe (docs/portal.md, "Embedding"), in headless
 * Chromium, as it is deployed: hookrelay behind a TLS-terminating proxy with
 * HOOKRELAY_PUBLIC_URL=https://127.0.0.1:<port>, framed by a page of a different site
 * (https://localhost:<port>). With that origin in HOOKRELAY_PORTAL_FRAME_ANCESTORS the
 * portal opens inside the frame (its partitioned SameSite=None cookie holds the session);
 * a site not listed gets no portal in its frame. The certificate is a throwaway
 * self-signed one made with openssl for this run.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import http from "node:http";
import https from "node:https";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { launchBrowser, watchPage } from "./helpers/browser.ts";
import { type Harness, startHarness } from "./helpers/harness.ts";
import { waitFor } from "./helpers/receiver.ts";

const V1 = "/api/v1";
let dir: string;
let tls: { key: Buffer; cert: Buffer };
let h: Harness;
let proxy: https.Server;
let allowedHost: https.Server;
let otherHost: https.Server;
let browser: Browser;
let portalOrigin: string;
let appId: string;
let frameSrc = "";

const listen = async (server: http.Server | https.Server) => {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return (server.address() as AddressInfo).port;
};
const close = (server: http.Server | https.Server | undefined) =>
  new Promise<void>((resolve) => {
    if (!server) return resolve();
    server.closeAllConnections();
    server.close(() => resolve());
  });

/** A page of the operator's product that frames the portal link `frameSrc`. */
const hostPage = () =>
  https.createServer(tls, (_req, res) => {
    res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
    res.end(
      `<!doctype html><title>Product</title><h1>Product</h1><iframe id="portal" src="${frameSrc}" width="1000" height="700"></iframe>`,
    );
  });

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), "portal-tls-"));
  execFileSync(
    "openssl",
    [
      "req",
      "-x509",
      "-newkey",
      "rsa:2048",
      "-nodes",
      "-days",
      "1",
      "-subj",
      "/CN=localhost",
      "-addext",
      "subjectAltName=DNS:localhost,IP:127.0.0.1",
      "-keyout",
      path.join(dir, "key.pem"),
      "-out",
      path.join(dir, "cert.pem"),
    ],
    { stdio: "ignore" },
  );
  tls = {
    key: readFileSync(path.join(dir, "key.pem")),
    cert: readFileSync(path.join(dir, "cert.pem")),
  };

  allowedHost = hostPage();
  otherHost = hostPage();
  const allowedPort = await listen(allowedHost);
  await listen(otherHost);
  // The TLS proxy's port must be known before hookrelay's configuration names it.
  let apiPort = 0;
  proxy = https.createServer(tls, (req, res) => {
    const upstream = http.request(
      { host: "127.0.0.1", port: apiPort, method: req.method, path: req.url, headers: req.headers },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.on("error", () => res.destroy());
    req.pipe(upstream);
  });
  const proxyPort = await listen(proxy);
  portalOrigin = `https://127.0.0.1:${proxyPort}`;
  h = await startHarness({
    publicUrl: portalOrigin,
    portalFrameAncestors: [`https://localhost:${allowedPort}`],
  });
  await h.api.listen({ host: "127.0.0.1", port: 0 });
  apiPort = (h.api.server.address() as AddressInfo).port;
  appId = (await h.call("POST", `${V1}/app`, { name: "Framed" })).body.id;
  await h.call("POST", `${V1}/app/${appId}/endpoint`, {
    url: "http://127.0.0.1:9/framed",
    description: "framed endpoint",
  });
  browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
  await h?.close();
  await Promise.all([close(proxy), close(allowedHost), close(otherHost)]);
  if (dir) rmSync(dir, { recursive: true, force: true });
});

async function framedBy(host: https.Server) {
  const link = await h.call("POST", `${V1}/auth/app-portal-access/${appId}`, {});
  expect(link.body.url.startsWith(`${portalOrigin}/portal/#token=`)).toBe(true);
  frameSrc = link.body.url;
  const context = await browser.newContext({ ignoreHTTPSErrors: true });
  const page = await context.newPage();
  const problems = watchPage(page);
  await page.goto(`https://localhost:${(host.address() as AddressInfo).port}/`);
  return { context, page, problems };
}

describe("the portal in another site's iframe, over https", () => {
  test("an allowed site: the portal opens in the frame and keeps its session there", async () => {
    const { context, page, problems } = await framedBy(allowedHost);
    const frame = page.frameLocator("#portal");
    await expect(frame.locator("h1").textContent()).resolves.toBe("Endpoints");
    await expect(frame.locator("tbody").textContent()).resolves.toContain("framed endpoint");
    // a second page of the portal, in the same frame: the partitioned cookie is sent
    await frame.locator("nav >> text=Event types").click();
    await expect(frame.locator("h1").textContent()).resolves.toBe("Event types");
    // the session cookie: SameSite=None, Secure, HttpOnly, partitioned by the framing site
    const cookies = await context.cookies();
    expect(cookies.map((c) => [c.name, c.sameSite, c.secure, c.httpOnly, c.partitionKey])).toEqual([
      ["hookrelay_portal", "None", true, true, "https://localhost"],
    ]);
    expect(problems).toEqual([]);
    await context.close();
  });

  test("a site not in HOOKRELAY_PORTAL_FRAME_ANCESTORS gets no portal in its frame", async () => {
    const { context, page, problems } = await framedBy(otherHost);
    await page.waitForLoadState("load");
    // the browser refuses to render the portal there, and says why (CSP frame-ancestors)
    await waitFor(
      () => problems.some((p) => p.includes("frame-ancestors")),
      10_000,
      "the browser's frame-ancestors refusal",
    );
    const frame = page.frames().find((f) => f !== page.mainFrame());
    expect(frame).toBeDefined();
    expect(await frame!.$("#portal-landing")).toBeNull();
    expect(await context.cookies()).toEqual([]);
    await context.close();
  });
});
