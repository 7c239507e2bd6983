#!/usr/bin/env node
// Produces the README's screenshots (docs/dashboard-overview.png, docs/dashboard-endpoint.png,
// docs/dashboard-endpoints.png, docs/portal-endpoint.png) from a real run: starts `hookrelay
// start` (compiled, embedded PostgreSQL in a temporary folder) and a local receiver with
// fast, slow, flaky and broken paths, sends messages for a few minutes, then photographs
// the pages in headless Chromium at their DEFAULT range (24 h), as a new user sees them
// after a few minutes of traffic.
//
//   npm run build && node bin/screenshots.js [--minutes 4]
//
// Needs /usr/bin/chromium (Debian's `chromium` package). Everything listens on 127.0.0.1.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import http from "node:http";
import { createServer } from "node:net";
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { chromium } from "playwright-core";

const root = path.resolve(import.meta.dirname, "..");
const { values } = parseArgs({ options: { minutes: { type: "string", default: "4" } } });
const minutes = Number(values.minutes);
const ADMIN_KEY = "screenshot-admin-key-not-secret";

const freePort = () =>
  new Promise((resolve) => {
    const s = createServer().listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const rand = (a, b) => a + Math.random() * (b - a);

// The receiver: each path behaves like a kind of partner.
const receiver = http.createServer((req, res) => {
  req.resume();
  req.on("end", async () => {
    const kind = req.url.split("/")[1];
    const t = Date.now() / 1000;
    if (kind === "fast") await sleep(rand(15, 60));
    if (kind === "slow") await sleep(rand(300, 900) + 600 * Math.max(0, Math.sin(t / 40)));
    if (kind === "flaky") {
      await sleep(rand(40, 200));
      if (Math.random() < 0.3) return res.writeHead(503).end("busy");
    }
    if (kind === "down") return res.writeHead(500).end("internal error");
    if (kind === "auth") return res.writeHead(401).end("bad token");
    res.writeHead(200).end("ok");
  });
});
await new Promise((r) => receiver.listen(0, "127.0.0.1", r));
const rx = `http://127.0.0.1:${receiver.address().port}`;

const dataDir = mkdtempSync(path.join(os.tmpdir(), "hookrelay-shots-"));
const port = await freePort();
const server = spawn(process.execPath, [path.join(root, "dist/cli/main.js"), "start"], {
  cwd: root,
  env: {
    ...process.env,
    HOOKRELAY_DATA_DIR: dataDir,
    HOOKRELAY_PORT: String(port),
    HOOKRELAY_ADMIN_KEY: ADMIN_KEY,
    HOOKRELAY_SSRF_ALLOWLIST: "127.0.0.0/8",
    HOOKRELAY_RETRY_BASE_MS: "2000",
    HOOKRELAY_RETRY_CAP_MS: "10000",
    HOOKRELAY_STATS_INTERVAL_MS: "5000",
    HOOKRELAY_MAINTENANCE_INTERVAL_MS: "5000",
    HOOKRELAY_LOG_LEVEL: "warn",
  },
  stdio: ["ignore", "pipe", "inherit"],
});
const base = `http://127.0.0.1:${port}`;
let stopped = false;
async function stop() {
  if (stopped) return;
  stopped = true;
  server.kill("SIGTERM");
  await new Promise((r) => server.once("exit", r));
  receiver.close();
  rmSync(dataDir, { recursive: true, force: true });
}

for (const signal of ["SIGINT", "SIGTERM"]) {
  process.once(signal, () => void stop().finally(() => process.exit(130)));
}

try {
  await new Promise((resolve, reject) => {
    let out = "";
    server.stdout.on("data", (c) => {
      out += c;
      if (out.includes("dashboard:")) resolve();
    });
    server.once("exit", (code) => reject(new Error(`hookrelay exited ${code}`)));
  });
  const api = async (method, url, body) => {
    const res = await fetch(`${base}/api/v1${url}`, {
      method,
      headers: { authorization: `Bearer ${ADMIN_KEY}`, "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    if (res.status >= 400) throw new Error(`${method} ${url}: ${res.status} ${await res.text()}`);
    return res.status === 204 ? null : res.json();
  };
  const apps = {
    shop: await api("POST", "/app", { name: "Acme Shop", uid: "acme-shop" }),
    games: await api("POST", "/app", { name: "Bravo Games", uid: "bravo-games" }),
    ads: await api("POST", "/app", { name: "Tracker Co", uid: "tracker-co" }),
  };
  const endpoints = [
    [apps.shop, "fast/orders", "Order events for the ERP"],
    [apps.shop, "slow/warehouse", "Warehouse sync (slow partner)"],
    [apps.shop, "flaky/crm?email=ops@example.com", "CRM, busy at times"],
    [apps.games, "fast/ledger", "Wallet ledger"],
    [apps.games, "down/bonus", "Bonus engine (down)"],
    [apps.ads, "auth/postback?click_id=abc123", "Affiliate postback"],
    [apps.ads, "fast/conversions", "Conversions"],
    // a postback URL template: shown as written, {click_id} and all
    [apps.ads, "fast/pb?payout={payout}&cid={click_id}", "Tracker postback", { method: "GET" }],
  ];
  const created = [];
  for (const [app, p, description, extra] of endpoints) {
    created.push({
      app,
      ep: await api("POST", `/app/${app.id}/endpoint`, {
        url: `${rx}/${p}`,
        description,
        ...extra,
      }),
    });
  }
  const until = Date.now() + minutes * 60_000;
  let sent = 0;
  process.stdout.write(
    `screenshots: sending messages for ${minutes} min to ${created.length} endpoints\n`,
  );
  while (Date.now() < until) {
    const burst = Math.round(rand(4, 14));
    await Promise.all(
      Object.values(apps).flatMap((app) =>
        Array.from({ length: burst }, () =>
          api("POST", `/app/${app.id}/msg`, {
            eventType: "order.paid",
            eventId: `evt_${++sent}`,
            payload: {
              order: sent,
              total: "49.90",
              email: "buyer@example.com",
              payout: "4.50",
              click_id: `c${sent}`,
            },
          }),
        ),
      ),
    );
    await sleep(1000);
  }
  await sleep(6000);

  const browser = await chromium.launch({
    executablePath: "/usr/bin/chromium",
    headless: true,
    args: ["--no-sandbox", "--disable-gpu"],
  });
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  await page.goto(`${base}/dashboard/sign-in`);
  await page.fill("#key", ADMIN_KEY);
  await Promise.all([page.waitForURL(`${base}/dashboard`), page.click("button[type=submit]")]);
  // (a function, not a string: the dashboard's CSP forbids the eval a string would need)
  const drawn = () =>
    page.waitForFunction(() =>
      [...document.querySelectorAll("[data-chart]")].every(
        (el) => el.getAttribute("data-state") === "drawn",
      ),
    );
  await page.goto(`${base}/dashboard`);
  await drawn();
  await page.screenshot({ path: path.join(root, "docs/dashboard-overview.png"), fullPage: true });
  const slow = created[1].ep.id;
  await page.goto(`${base}/dashboard/endpoints/${slow}`);
  await drawn();
  await page.screenshot({ path: path.join(root, "docs/dashboard-endpoint.png"), fullPage: true });
  await page.goto(`${base}/dashboard/endpoints?sort=p95&dir=desc`);
  await page.screenshot({ path: path.join(root, "docs/dashboard-endpoints.png"), fullPage: true });
  // the tenant portal of the shop, its slow endpoint (the viewport: its page is long)
  const link = await api("POST", `/auth/app-portal-access/${apps.shop.id}`, {});
  const portal = await browser.newPage({ viewport: { width: 1280, height: 1100 } });
  await Promise.all([
    portal.waitForURL(`${base}/portal/endpoints`),
    portal.goto(`${base}/portal/#token=${link.token}`),
  ]);
  await portal.goto(`${base}/portal/endpoints/${slow}`);
  await portal.waitForFunction(() =>
    [...document.querySelectorAll("[data-chart]")].every(
      (el) => el.getAttribute("data-state") === "drawn",
    ),
  );
  await portal.screenshot({ path: path.join(root, "docs/portal-endpoint.png") });
  await browser.close();
  process.stdout.write(
    `screenshots: ${sent} messages sent; wrote docs/dashboard-*.png and docs/portal-endpoint.png\n`,
  );
} finally {
  await stop();
}
