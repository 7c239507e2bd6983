/**
 * `hookrelay metrics` against a real server whose worker feeds its /metrics (as
 * runtime.ts wires them): the summary of deliveries, failures, latency percentiles, the
 * queue, per endpoint and per app, as text and --json; and a /metrics behind its token.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createApiKey } from "../src/api/auth.ts";
import { makeHttpSender } from "../src/delivery/http-sender.ts";
import { silentLogger } from "../src/logger.ts";
import { makeMetrics } from "../src/ops/metrics.ts";
import { makeRedactor } from "../src/security/redact.ts";
import { makeSecretBox } from "../src/security/secret-box.ts";
import { makeSsrfGuard } from "../src/security/ssrf-guard.ts";
import { makeWorker, type Worker } from "../src/worker/worker.ts";
import { type CliOptions, listenOnLoopback, runCliInProcess, show } from "./helpers/cli.ts";
import { createTestDb, type TestDb } from "./helpers/db.ts";
import { buildTestApi, testConfig } from "./helpers/harness.ts";
import { type Receiver, startReceiver, waitFor } from "./helpers/receiver.ts";

const V1 = "/api/v1";
const TOKEN = "metrics-token-for-the-test";

let db: TestDb;
let worker: Worker;
let sender: ReturnType<typeof makeHttpSender>;
let receiver: Receiver;
let open: { url: string; close(): Promise<void> };
let guarded: { url: string; close(): Promise<void> };
let key: string;
const X = { app: "", ok: "", bad: "" };

const cli = (url: string, args: string[], options: CliOptions = {}) =>
  runCliInProcess(args, {
    ...options,
    env: {
      HOOKRELAY_URL: url,
      HOOKRELAY_KEY: key,
      HOOKRELAY_DATA_DIR: "/nonexistent",
      ...options.env,
    },
  });

beforeAll(async () => {
  db = await createTestDb();
  const config = testConfig({ databaseUrl: db.url });
  const metrics = makeMetrics({ pool: db.pool, maxEndpointLabels: 10 });
  const api = await buildTestApi({ pool: db.pool, config, metrics });
  open = { url: await listenOnLoopback(api), close: () => api.close() };
  const tokenApi = await buildTestApi({
    pool: db.pool,
    config: { ...config, metricsToken: TOKEN },
    metrics,
  });
  guarded = { url: await listenOnLoopback(tokenApi), close: () => tokenApi.close() };
  key = (await createApiKey(db.pool, { role: "admin" }, "cli metrics test")).key;
  receiver = await startReceiver((r) => ({ status: r.path === "/bad" ? 500 : 200, delayMs: 30 }));
  const call = async (path: string, body: unknown) => {
    const res = await fetch(`${open.url}${V1}${path}`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    return (await res.json()) as { id: string };
  };
  X.app = (await call("/app", { name: "Metrics Acme", uid: "metrics-acme" })).id;
  X.ok = (await call(`/app/${X.app}/endpoint`, { url: `${receiver.url}/ok` })).id;
  X.bad = (
    await call(`/app/${X.app}/endpoint`, {
      url: `${receiver.url}/bad`,
      maxAttempts: 1,
      eventTypes: ["order.refunded"],
    })
  ).id;
  for (let n = 0; n < 3; n++)
    await call(`/app/${X.app}/msg`, { eventType: "order.paid", payload: { n } });
  for (let n = 0; n < 2; n++)
    await call(`/app/${X.app}/msg`, { eventType: "order.refunded", payload: { n } });
  sender = makeHttpSender({ ssrfGuard: makeSsrfGuard({ allowlist: config.ssrfAllowlist }) });
  worker = makeWorker({
    pool: db.pool,
    sender,
    config: { delivery: config.delivery, health: config.health, worker: config.worker },
    logger: silentLogger,
    secretBox: makeSecretBox(config.encryptionKey, config.encryptionKeyPrevious),
    redactor: makeRedactor(config.sensitiveFields),
    telemetry: metrics.worker,
  });
  worker.start();
  // 3 + 2 to ok, 2 to bad: every attempt written (and fed to the metrics)
  await waitFor(
    async () =>
      (await db.pool.query("select count(*)::int as n from attempts")).rows[0].n === 7 &&
      (
        await db.pool.query(
          "select count(*)::int as n from deliveries where status not in ('delivered', 'dead_letter')",
        )
      ).rows[0].n === 0,
    30_000,
    "seven attempts",
  );
});
afterAll(async () => {
  await worker?.stop();
  await sender?.close();
  await receiver?.close();
  await open?.close();
  await guarded?.close();
  await db?.drop();
});

describe("hookrelay metrics", { timeout: 60_000 }, () => {
  test("--json: deliveries, failures, latency percentiles, queue, per endpoint and app", async () => {
    const r = await cli(open.url, ["metrics", "--json"]);
    expect(r.code, show(r)).toBe(0);
    const m = JSON.parse(r.stdout);
    expect(m.deliveries).toEqual({ delivered: 5, dead_letter: 2 });
    expect(m.attempts).toEqual({ "2xx": 5, "5xx": 2 });
    expect(m.failedAttempts).toBe(2);
    expect(m.latency.count).toBe(7);
    // every attempt took at least the receiver's 30 ms
    for (const p of ["p50Ms", "p95Ms", "p99Ms", "meanMs"])
      expect(m.latency[p]).toBeGreaterThanOrEqual(25);
    expect(m.latency.p50Ms).toBeLessThanOrEqual(m.latency.p99Ms);
    const byEndpoint = Object.fromEntries(
      m.endpoints.map((e: { endpoint: string; count: number }) => [e.endpoint, e.count]),
    );
    expect(byEndpoint).toEqual({ [X.ok]: 5, [X.bad]: 2 });
    expect(m.apps).toEqual([{ app: X.app, deliveries: { delivered: 5, dead_letter: 2 } }]);
    expect(m.queue).toEqual({ pending: 0, failed: 0, in_flight: 0 });
    expect(m.deadLetters).toBe(2);
    expect(m.databaseRead).toBe(true);
  });

  test("the summary for a person", async () => {
    const r = await cli(open.url, ["metrics"]);
    expect(r.code, show(r)).toBe(0);
    expect(r.stdout).toMatch(
      /^deliveries \(since start\)\s+(delivered 5, dead_letter 2|dead_letter 2, delivered 5)$/m,
    );
    expect(r.stdout).toMatch(/^failed attempts\s+2$/m);
    expect(r.stdout).toMatch(
      /^attempt latency\s+p50 \d+ ms, p95 \d+ ms, p99 \d+ ms, mean \d+ ms \(7 attempts\)$/m,
    );
    expect(r.stdout).toMatch(/^dead letters\s+2$/m);
    expect(r.stdout).toMatch(new RegExp(`^${X.ok}\\s+5\\s+\\d+ ms`, "m"));
    expect(r.stdout).toMatch(
      new RegExp(`^${X.app}\\s+(delivered 5, dead_letter 2|dead_letter 2, delivered 5)$`, "m"),
    );
  });

  test("a /metrics behind its token: missing or wrong is said so, the right one works", async () => {
    const none = await cli(guarded.url, ["metrics"]);
    expect(none.code).toBe(1);
    expect(none.stderr).toMatch(
      /requires its metrics token for \/metrics \(401\): pass --metrics-token or set HOOKRELAY_METRICS_TOKEN/,
    );
    const wrong = await cli(guarded.url, ["metrics", "--metrics-token", "nope", "--json"]);
    expect(wrong.code).toBe(1);
    expect(JSON.parse(wrong.stdout).error).toMatchObject({ code: "unauthorized", status: 401 });
    expect(JSON.parse(wrong.stdout).error.message).toMatch(/refused the metrics token/);
    const right = await cli(guarded.url, ["metrics", "--json"], {
      env: { HOOKRELAY_METRICS_TOKEN: TOKEN },
    });
    expect(right.code, show(right)).toBe(0);
    expect(JSON.parse(right.stdout).deadLetters).toBe(2);
  });
});
