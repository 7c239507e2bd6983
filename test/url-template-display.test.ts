/**
 * A postback endpoint's URL template is shown as written wherever it is shown (README.md,
 * Postbacks): `{payout}`, `{click_id}` and `{$token}` as placeholders, a literal sensitive
 * value masked, nothing percent-encoded: the API's health, dead-letter and delivery
 * listings, the attempts of a message that could not be rendered, the dashboard's
 * overview, endpoint table, endpoint page, dead letters and message lookup, the portal's
 * endpoint list, endpoint page and message page, and the CLI. One attempt's request keeps
 * its rendered URL (the fact of what was sent), masked.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { escapeHtml } from "../src/dashboard/html.ts";
import { refreshLatencyStats } from "../src/health/latency-stats.ts";
import { listenOnLoopback, runCliInProcess, show } from "./helpers/cli.ts";
import { dashboardClient } from "./helpers/dashboard-client.ts";
import { deliveryCalls } from "./helpers/deliveries.ts";
import { type Harness, startHarness } from "./helpers/harness.ts";
import { openPortal } from "./helpers/portal-client.ts";
import { type Receiver, startReceiver } from "./helpers/receiver.ts";

const V1 = "/api/v1";
let h: Harness;
let rx: Receiver;
let dir: string;
let serverUrl: string;
let appId: string;
let epId: string;
let delivered: string;
let dead: string;
/** the template as written, its literal api_key masked */
let shown: string;
const TEMPLATE_TAIL = "/pb/{$token}?payout={payout}&cid={click_id}&api_key=L1teral-k3y";
const { newApp, newEndpoint, send, waitForStatus } = deliveryCalls(() => h);

beforeAll(async () => {
  h = await startHarness();
  rx = await startReceiver();
  dir = await mkdtemp(path.join(tmpdir(), "hookrelay-template-display-"));
  serverUrl = await listenOnLoopback(h.api);
  appId = await newApp();
  epId = await newEndpoint(appId, `${rx.url}${TEMPLATE_TAIL}`, {
    method: "GET",
    urlToken: "t0ken-value",
  });
  shown = `${rx.url}/pb/{$token}?payout={payout}&cid={click_id}&api_key=***`;
  h.startWorker();
  delivered = await send(appId, { payout: 12, click_id: "c1ick-abc" });
  // no payout: the template cannot be rendered, a dead letter without a request
  dead = await send(appId, { click_id: "c1ick-def" });
  await waitForStatus(delivered, epId, "delivered");
  await waitForStatus(dead, epId, "dead_letter");
  // the overview's slowest-endpoint table lists endpoints with figures (the stats refresh)
  await refreshLatencyStats(h.db.pool, h.config.health);
});
afterAll(async () => {
  await h?.close();
  await rx?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** The page shows the template as written (escaped as HTML) and never its encoded form. */
function expectShownIn(page: string, what: string) {
  expect(page, what).toContain(escapeHtml(shown));
  expect(page, what).not.toContain("%7B");
  expect(page, what).not.toContain("L1teral-k3y");
  expect(page, what).not.toContain("t0ken-value");
}

describe("the API", () => {
  test("health, dead letters and a message's deliveries show the template as written", async () => {
    const health = await h.call("GET", `${V1}/health/endpoints?app_id=${appId}`);
    expect(health.body.data.map((e: { url: string }) => e.url)).toEqual([shown]);
    const analysis = await h.call("GET", `${V1}/dead-letters/analysis?endpoint_id=${epId}`);
    expect(analysis.body.data[0].url).toBe(shown);
    const list = await h.call("GET", `${V1}/dead-letters?endpoint_id=${epId}`);
    expect(list.body.data[0].url).toBe(shown);
    const deliveries = await h.call("GET", `${V1}/app/${appId}/msg/${dead}/endpoint`);
    expect(deliveries.body.data[0].url).toBe(shown);
  });

  test("an attempt's URL: the request as sent (masked) when rendered, the template as written when not", async () => {
    const sent = await h.call("GET", `${V1}/app/${appId}/attempt/msg/${delivered}`);
    expect(sent.body.data[0].url).toBe(`${rx.url}/pb/***?payout=12&cid=***&api_key=***`);
    const unsent = await h.call("GET", `${V1}/app/${appId}/attempt/msg/${dead}`);
    expect(unsent.body.data[0].url).toBe(shown);
  });
});

describe("the pages", () => {
  test("dashboard: overview, endpoint table, endpoint page, dead letters, message lookup", async () => {
    const c = dashboardClient(h.api);
    await c.signIn(h.adminKey);
    for (const url of [
      "/dashboard",
      "/dashboard/endpoints",
      `/dashboard/endpoints/${epId}`,
      "/dashboard/dead-letters",
      `/dashboard/messages?q=${dead}`,
    ]) {
      const page = await c.get(url);
      expect(page.statusCode, url).toBe(200);
      expectShownIn(page.body, url);
    }
  });

  test("portal: endpoint list, endpoint page, message page", async () => {
    const link = await h.call("POST", `${V1}/auth/app-portal-access/${appId}`, {});
    const c = await openPortal(h.api, link.body.token);
    for (const url of [
      "/portal/endpoints",
      `/portal/endpoints/${epId}`,
      `/portal/messages/${dead}`,
    ]) {
      const page = await c.get(url);
      expect(page.statusCode, url).toBe(200);
      expectShownIn(page.body, url);
    }
  });
});

describe("the CLI", () => {
  const cli = (args: string[]) =>
    runCliInProcess(args, {
      env: { HOOKRELAY_URL: serverUrl, HOOKRELAY_KEY: h.adminKey, HOOKRELAY_DATA_DIR: dir },
    });

  test("endpoints, dlq analyze and endpoint list print the template as written, masked", async () => {
    for (const args of [
      ["endpoints", "--app", appId],
      ["dlq", "analyze", "--endpoint", epId],
    ]) {
      const run = await cli(args);
      expect(run.code, show(run)).toBe(0);
      expect(run.stdout, args.join(" ")).toContain(shown);
      expect(run.stdout).not.toContain("%7B");
    }
    // the endpoint list's table shows it as the pages do: as written, its literal sensitive
    // value masked
    const list = await cli(["endpoint", "list", appId]);
    expect(list.code, show(list)).toBe(0);
    expect(list.stdout).toContain(shown);
    expect(list.stdout).not.toContain("L1teral-k3y");
    expect(list.stdout).not.toContain("%7B");
    // --json prints the API's answer to the key's holder as it is: the URL as saved
    const json = await cli(["endpoint", "list", appId, "--json"]);
    expect(json.code, show(json)).toBe(0);
    expect(JSON.parse(json.stdout).map((e: { url: string }) => e.url)).toContain(
      `${rx.url}${TEMPLATE_TAIL}`,
    );
  });
});
