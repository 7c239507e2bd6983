/**
 * An in-process hookrelay for tests: API (through app.inject or a real port) and a worker
 * on a test database, with short retry delays set by configuration.
 */
import type { FastifyInstance } from "fastify";
import { createApiKey, makeAuthenticator, makeKeyChecker } from "../../src/api/auth.ts";
import { type Config, loadConfig } from "../../src/config.ts";
import type { SqlClock } from "../../src/db/sql/clock.ts";
import { makeHttpSender } from "../../src/delivery/http-sender.ts";
import { buildHttpApp, type HttpAppOptions } from "../../src/http-app.ts";
import { silentLogger } from "../../src/logger.ts";
import { makeMetrics } from "../../src/ops/metrics.ts";
import { makeEnqueueBatcher } from "../../src/queue/enqueue-batcher.ts";
import { makeRedactor } from "../../src/security/redact.ts";
import { makeSecretBox } from "../../src/security/secret-box.ts";
import { makeSsrfGuard } from "../../src/security/ssrf-guard.ts";
import { makeWorker, type Worker } from "../../src/worker/worker.ts";
import { createTestDb, type TestDb } from "./db.ts";

export interface CallResult {
  status: number;
  // biome-ignore lint/suspicious/noExplicitAny: response JSON of many shapes; tests assert on it field by field
  body: any;
  headers: Record<string, unknown>;
}

export interface Harness {
  db: TestDb;
  config: Config;
  api: FastifyInstance;
  adminKey: string;
  /** JSON request through app.inject with the admin key */
  call(
    method: string,
    url: string,
    body?: unknown,
    headers?: Record<string, string>,
  ): Promise<CallResult>;
  /** A worker on the harness's database; `clock`: its SQL clock (helpers/test-clock.ts). */
  startWorker(overrides?: Partial<Config["worker"]>, options?: { clock?: SqlClock }): Worker;
  close(): Promise<void>;
}

/** Test configuration: tiny retry delays and drain timeouts, fast polling. */
export function testConfig(overrides: Partial<Config> = {}): Config {
  const base = loadConfig({});
  return loadConfig(
    {},
    {
      // the test receivers listen on loopback, which the SSRF guard refuses by default
      ssrfAllowlist: ["127.0.0.0/8"],
      ...overrides,
      delivery: {
        ...base.delivery,
        retryBaseMs: 50,
        retryCapMs: 200,
        timeoutMs: 2_000,
        ...overrides.delivery,
      },
      worker: {
        ...base.worker,
        pollIntervalMs: 50,
        leaseMarginMs: 1_000,
        shutdownTimeoutMs: 5_000,
        ...overrides.worker,
      },
    },
  );
}

/**
 * An API on `pool` with the parts a process would give it, built from `config` (as
 * runtime.ts builds them) unless given. Its enqueue batcher runs until the API is closed.
 */
export async function buildTestApi(
  options: Pick<HttpAppOptions, "pool" | "config"> & Partial<HttpAppOptions>,
): Promise<FastifyInstance> {
  const { pool, config } = options;
  const batcher =
    options.batcher ??
    makeEnqueueBatcher(pool, config.delivery.maxAttempts, {
      whileDisabled: config.delivery.whileDisabled,
    });
  batcher.start();
  const checkKey = makeKeyChecker(pool, config.adminKey);
  const api = await buildHttpApp({
    logger: silentLogger,
    ssrfGuard: makeSsrfGuard({ allowlist: config.ssrfAllowlist }),
    secretBox: makeSecretBox(config.encryptionKey, config.encryptionKeyPrevious),
    redactor: makeRedactor(config.sensitiveFields),
    metrics: makeMetrics({ pool, maxEndpointLabels: config.metricsMaxEndpoints }),
    authenticate: makeAuthenticator(checkKey),
    checkKey,
    ...options,
    batcher,
  });
  api.addHook("onClose", () => batcher.stop());
  return api;
}

export async function startHarness(overrides: Partial<Config> = {}): Promise<Harness> {
  const db = await createTestDb();
  const config = testConfig({ databaseUrl: db.url, ...overrides });
  const api = await buildTestApi({ pool: db.pool, config });
  const { key: adminKey } = await createApiKey(db.pool, { role: "admin" });
  const workers: Worker[] = [];
  const senders: ReturnType<typeof makeHttpSender>[] = [];
  return {
    db,
    config,
    api,
    adminKey,
    async call(method, url, body, headers = {}) {
      const res = await api.inject({
        method: method as "GET",
        url,
        headers: {
          authorization: `Bearer ${adminKey}`,
          ...(body !== undefined && { "content-type": "application/json" }),
          ...headers,
        },
        payload:
          body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
      });
      let parsed: unknown = res.body;
      try {
        parsed = res.body ? JSON.parse(res.body) : null;
      } catch {}
      return { status: res.statusCode, body: parsed, headers: res.headers };
    },
    startWorker(workerOverrides = {}, options = {}) {
      const sender = makeHttpSender({
        ssrfGuard: makeSsrfGuard({ allowlist: config.ssrfAllowlist }),
        egress: config.egress,
      });
      senders.push(sender);
      const worker = makeWorker({
        pool: db.pool,
        sender,
        config: {
          delivery: config.delivery,
          health: config.health,
          worker: { ...config.worker, ...workerOverrides },
        },
        logger: silentLogger,
        // what the API builds from the same configuration
        secretBox: makeSecretBox(config.encryptionKey, config.encryptionKeyPrevious),
        redactor: makeRedactor(config.sensitiveFields),
        // broker destinations' hosts, vetted under the same allow-list
        ssrfGuard: makeSsrfGuard({ allowlist: config.ssrfAllowlist }),
        ...(options.clock && { clock: options.clock }),
      });
      worker.start();
      workers.push(worker);
      return worker;
    },
    async close() {
      for (const w of workers) await w.stop();
      for (const s of senders) await s.close();
      await api.close();
      await db.drop();
    },
  };
}
