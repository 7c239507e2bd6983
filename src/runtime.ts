/**
 * Wires the long-lived parts of a hookrelay process, the one place that builds them (one
 * redactor, secret box and SSRF guard per process, handed to whoever needs them), and
 * stops them in order: stop intake (HTTP), write the messages it accepted (the enqueue
 * batcher), stop the replay runner, drain the worker, release its liveness lock (only once
 * its results are written: docs/worker-liveness.md), close the listener and maintenance,
 * end the pool, stop the embedded database. `start` and `stop` are safe to call twice.
 */
import type { FastifyInstance } from "fastify";
import { ensureFirstAdminKey, makeAuthenticator, makeKeyChecker } from "./api/auth.ts";
import { localClientUrl, provideLocalCliAccess } from "./api/local-cli-key.ts";
import { registerMetricsRoute } from "./api/routes/health.ts";
import type { Config } from "./config.ts";
import { resolveDatabaseMode } from "./db/database-mode.ts";
import { openDatabase } from "./db/open-database.ts";
import { type Pool, usePreparedStatements } from "./db/pool.ts";
import { purgeDashboardSessions } from "./db/queries/dashboard-sessions.ts";
import { ping } from "./db/queries/ping.ts";
import { purgeEndedPortalTokens } from "./db/queries/portal-access.ts";
import { prepareSchema } from "./db/start-schema.ts";
import { startupRefusal } from "./db/startup-refusal.ts";
import { isDatabaseUnavailable } from "./db/unavailable.ts";
import { makeHttpSender } from "./delivery/http-sender.ts";
import type { OperationalTarget } from "./domain/operational-events.ts";
import { reconcileInFlight } from "./health/in-flight.ts";
import { purgeLatencySamples, refreshLatencyStats } from "./health/latency-stats.ts";
import { makeBackoff } from "./lib/backoff.ts";
import type { Logger, ProcessLogging } from "./logger.ts";
import { postAlerts } from "./ops/alert-webhook.ts";
import { syncAlerts } from "./ops/alerts.ts";
import { partitionNotes } from "./ops/attempt-partitions.ts";
import { rollUpCharts } from "./ops/chart-rollup.ts";
import { raiseDeliveryFloor } from "./ops/delivery-floor.ts";
import { summarizeDeliveryIdBlocks } from "./ops/delivery-id-blocks.ts";
import {
  type Maintenance,
  type MaintenanceTask,
  makeMaintenance,
  purgeIdempotencyKeys,
} from "./ops/maintenance.ts";
import { ensureHistoryPartitions } from "./ops/message-partitions.ts";
import { makeMetrics } from "./ops/metrics.ts";
import { ensureOperationalEndpoint } from "./ops/operational-webhook.ts";
import { NO_PARTITION_OWNER, withPartitionOwner } from "./ops/partition-owner.ts";
import { makeReplayRunner, type ReplayRunner } from "./ops/replay-runner.ts";
import { purgeExpiredUntil } from "./ops/retention.ts";
import { makeTracing, type Tracing } from "./ops/tracing.ts";
import { type EnqueueBatcher, makeEnqueueBatcher } from "./queue/enqueue-batcher.ts";
import { purgeOldHeartbeats } from "./queue/worker-heartbeat.ts";
import type { Redactor } from "./security/redact.ts";
import { makeSecretBox, type SecretBox } from "./security/secret-box.ts";
import { makeSsrfGuard } from "./security/ssrf-guard.ts";
import { makeSessionBound, type SessionBound } from "./session-bound.ts";
import type { Liveness } from "./worker/liveness.ts";
import type { WorkListener } from "./worker/work-listener.ts";
import { makeWorker, type Worker } from "./worker/worker.ts";

// made where every process starts (logger.ts), as `hookrelay/server` and tests know them here
export { makeProcessLogging, type ProcessLogging } from "./logger.ts";

export interface Roles {
  api: boolean;
  worker: boolean;
}

export interface Runtime {
  /** where the API listens, if this process serves it */
  apiUrl: string | null;
  /** a newly generated admin key (first start only) */
  generatedAdminKey: string | null;
  connectionString: string;
  /** true when the database is the embedded cluster in config.dataDir */
  embedded: boolean;
  pool: Pool;
  worker: Worker | null;
  api: FastifyInstance | null;
  stop(): Promise<void>;
}

/**
 * Runs a start-up step, retrying it with backoff while the database is unreachable (a
 * restart or failover, or a database started at the same moment as this process), for at
 * most `waitMs` in all: a worker that a supervisor restarts mid-failover then does not
 * exit again at once (docs/reliability.md). Any other error (a wrong password, say) fails
 * at once.
 */
export async function whileDatabaseStarts<T>(
  step: () => Promise<T>,
  deadline: number,
  logger: Logger,
): Promise<T> {
  const backoff = makeBackoff({ baseMs: 200, capMs: 5_000 });
  for (;;) {
    try {
      const result = await step();
      if (backoff.failures > 0) logger.info("database reachable");
      return result;
    } catch (err) {
      const left = deadline - performance.now();
      if (!isDatabaseUnavailable(err) || left <= 0) throw err;
      const delay = Math.min(backoff.next(), left);
      if (backoff.failures === 1)
        logger.warn({ err }, "database unreachable at start; waiting for it");
      await new Promise((r) => setTimeout(r, delay));
    }
  }
}

/** The periodic housekeeping every deployment runs (in one process at a time). */
export function maintenanceTasks(
  config: Config,
  secretBox: SecretBox,
  redactor: Redactor,
  logger: Logger,
): MaintenanceTask[] {
  const every = config.worker.maintenanceIntervalMs;
  return [
    {
      name: "latency-stats",
      everyMs: config.health.statsIntervalMs,
      run: (pool) => refreshLatencyStats(pool, config.health).then(() => undefined),
    },
    {
      name: "purge-latency-samples",
      everyMs: every,
      run: (pool) => purgeLatencySamples(pool, config.health.windowMs).then(() => undefined),
    },
    {
      name: "reconcile-in-flight",
      everyMs: every,
      run: (pool) => reconcileInFlight(pool).then(() => undefined),
    },
    { ...purgeIdempotencyKeys(config.idempotencyTtlMs), everyMs: every },
    {
      // the dashboard's charts (docs/dashboard.md, "Chart data"); an hour past the window
      name: "chart-rollup",
      everyMs: config.health.statsIntervalMs,
      run: (pool) =>
        rollUpCharts(pool, { keepMs: config.health.windowMs + 3_600_000 }).then(() => undefined),
    },
    {
      name: "purge-dashboard-sessions",
      everyMs: every,
      run: (pool) => purgeDashboardSessions(pool).then(() => undefined),
    },
    {
      // portal links a day past their end, and their sessions (docs/portal.md)
      name: "purge-portal-links",
      everyMs: every,
      run: (pool) => purgeEndedPortalTokens(pool, null).then(() => undefined),
    },
    {
      // heartbeat rows of workers that crashed (docs/database.md)
      name: "purge-heartbeats",
      everyMs: every,
      run: (pool) => purgeOldHeartbeats(pool).then(() => undefined),
    },
    {
      // before retention: a period is created before rows that need it are purged
      name: "partitions",
      everyMs: every,
      async run(pool) {
        // as the owner's role when this one may not (src/ops/partition-owner.ts)
        const created = await withPartitionOwner(
          pool,
          config.migrationDatabaseUrl,
          async (owner) => (owner === null ? [] : ensureHistoryPartitions(owner, config)),
          logger,
        );
        if (created.length > 0) logger.info({ created }, "history partitions created");
      },
    },
    {
      // the claim's floor, raised to the oldest queued delivery's period (docs/history.md)
      name: "delivery-floor",
      everyMs: every,
      run: (pool) => raiseDeliveryFloor(pool).then(() => undefined),
    },
    {
      // each block of delivery ids' range of message_ms, for lookups by id (docs/history.md)
      name: "delivery-id-blocks",
      everyMs: every,
      run: (pool) => summarizeDeliveryIdBlocks(pool).then(() => undefined),
    },
    {
      name: "retention",
      everyMs: every,
      async run(pool) {
        const { droppedPartitions, busyPartitions } = await withPartitionOwner(
          pool,
          config.migrationDatabaseUrl,
          (owner) =>
            purgeExpiredUntil(pool, config.retention, Number.POSITIVE_INFINITY, undefined, owner),
          logger,
        );
        if (droppedPartitions.length > 0)
          logger.info({ dropped: droppedPartitions }, "history partitions dropped by retention");
        if (busyPartitions.length > 0)
          logger.warn(
            { partitions: busyPartitions },
            "history partitions past retention left for the next run: statements under way held the lock their detach needs",
          );
      },
    },
    {
      name: "alerts",
      everyMs: every,
      async run(pool) {
        const changes = await syncAlerts(pool, config, (alert, err) =>
          logger.error(
            { err, kind: alert.kind, subject: alert.subject.id },
            "an alert could not be stored; the others were",
          ),
        );
        for (const a of [...changes.raised, ...changes.resolved])
          a.message = redactor.text(a.message);
        if (config.alerts.webhookUrl) {
          await postAlerts(
            pool,
            config.alerts.webhookUrl,
            changes,
            config.delivery.maxAttempts,
            secretBox,
          );
        }
      },
    },
  ];
}

export async function startRuntime(
  config: Config,
  roles: Roles,
  { logger, redactor }: ProcessLogging,
): Promise<Runtime> {
  const { pool, connectionString, embedded } = await openDatabase(config, logger);
  let api: FastifyInstance | null = null;
  let batcher: EnqueueBatcher | null = null;
  let worker: Worker | null = null;
  let liveness: Liveness | null = null;
  let listener: WorkListener | null = null;
  let maintenance: Maintenance | null = null;
  let replays: ReplayRunner | null = null;
  let sessionBound: SessionBound | null = null;
  let sender: ReturnType<typeof makeHttpSender> | null = null;
  let metricsServer: FastifyInstance | null = null;
  let tracing: Tracing | null = null;
  let stopping: Promise<void> | null = null;

  async function stopAll(): Promise<void> {
    await api?.close();
    // after the API: requests still running have handed it their messages
    await batcher?.stop();
    await metricsServer?.close();
    // before the worker: a batch under way ends, and its tasks are given up for another
    await replays?.stop();
    await worker?.stop();
    await liveness?.stop();
    await listener?.stop();
    await maintenance?.stop();
    await sessionBound?.end();
    await sender?.close();
    // after the worker: its last spans are exported (each export bounded by its timeout)
    await tracing?.shutdown();
    await pool.end();
    await embedded?.stop();
  }

  try {
    // Built first: a malformed HOOKRELAY_SSRF_ALLOWLIST stops the process at start.
    const ssrfGuard = makeSsrfGuard({ allowlist: config.ssrfAllowlist });
    const secretBox = makeSecretBox(config.encryptionKey, config.encryptionKeyPrevious);
    if (!secretBox.encrypting) {
      logger.warn(
        "HOOKRELAY_ENCRYPTION_KEY is not set: endpoint signing secrets are stored unencrypted",
      );
    }
    const startDeadline = performance.now() + config.dbStartupWaitMs;
    const starting = <T>(step: () => Promise<T>) =>
      whileDatabaseStarts(step, startDeadline, logger);
    // What DATABASE_URL reaches (docs/database.md): one line says the mode and its cost.
    const mode = await starting(() =>
      resolveDatabaseMode(config, connectionString, embedded !== null),
    );
    usePreparedStatements(pool, mode.pooler === "direct");
    logger.info({ pooler: mode.pooler, direct: mode.sessionUrl !== null }, mode.line);
    const applied = await starting(async () => {
      await ping(pool);
      // migrates where allowed, checks the role's rights (docs/database.md, "Roles and schema")
      return prepareSchema(pool, {
        schema: config.dbSchema,
        migrate: config.migrateOnStart,
        migrationDatabaseUrl: config.migrationDatabaseUrl,
        pooled: mode.pooler === "transaction",
        logger,
      });
    });
    if (applied.length > 0) logger.info({ applied }, "migrations applied");
    // the history tables' partitions, now and ahead (docs/history.md); the maintenance task
    // keeps them coming, and a missing one never fails an insert
    // (as the owner's role when this one may not: src/ops/partition-owner.ts)
    await withPartitionOwner(
      pool,
      config.migrationDatabaseUrl,
      async (owner) => {
        if (owner === null) {
          logger.warn(NO_PARTITION_OWNER);
          return [];
        }
        return ensureHistoryPartitions(owner, config);
      },
      logger,
    ).then(
      (created) => created.length > 0 && logger.info({ created }, "history partitions created"),
      (err) =>
        logger.warn(
          { err },
          "history partitions could not be created now; rows wait in the default partitions",
        ),
    );
    for (const note of partitionNotes(config)) logger.warn(note);
    // Operational webhooks: the operator app's endpoint, pointed at the configured URL.
    let operational: OperationalTarget | null = null;
    if (config.operationalWebhookUrl) {
      const url = config.operationalWebhookUrl;
      operational = await starting(() =>
        ensureOperationalEndpoint(pool, url, secretBox, config.delivery.maxAttempts),
      );
    }

    let generatedAdminKey: string | null = null;
    let apiUrl: string | null = null;
    const metrics = makeMetrics({
      pool,
      maxEndpointLabels: config.metricsMaxEndpoints,
      maxAppLabels: config.metricsMaxApps,
      inFlight: () => worker?.inFlight ?? 0,
    });
    // OpenTelemetry traces: off (and the SDK not loaded) unless configured (docs/telemetry.md)
    tracing = await makeTracing(config.tracing, metrics.tracing, logger);
    if (roles.api) {
      if (!config.adminKey) generatedAdminKey = await starting(() => ensureFirstAdminKey(pool));
      batcher = makeEnqueueBatcher(pool, config.delivery.maxAttempts, {
        whileDisabled: config.delivery.whileDisabled,
      });
      batcher.start();
      const checkKey = makeKeyChecker(pool, config.adminKey);
      // The HTTP application (Fastify, Ajv and the API's schemas, the docs, the dashboard
      // and the portal) loads only in a process that serves it: a worker starts without it.
      const { buildHttpApp } = await import("./http-app.ts");
      api = await buildHttpApp({
        pool,
        config,
        logger,
        ssrfGuard,
        secretBox,
        redactor,
        batcher,
        metrics,
        tracing,
        operational,
        authenticate: makeAuthenticator(checkKey),
        checkKey,
      });
      await api.listen({ host: config.host, port: config.port });
      const address = api.server.address();
      const port = typeof address === "object" && address ? address.port : config.port;
      apiUrl = `http://${config.host.includes(":") ? `[${config.host}]` : config.host}:${port}`;
      // The local CLI finds this server through the data folder (docs/cli.md).
      if (embedded)
        await provideLocalCliAccess(pool, config.dataDir, localClientUrl(config.host, port));
    }
    if (roles.worker && !roles.api && config.metricsPort > 0) {
      // A worker-only process has no API; it can still be scraped (Fastify loaded for it).
      const { default: Fastify } = await import("fastify");
      const server = Fastify({ logger: false });
      registerMetricsRoute(server, metrics, config.metricsToken);
      await server.listen({ host: config.host, port: config.metricsPort });
      metricsServer = server;
    }
    if (roles.worker) {
      sender = makeHttpSender({ ssrfGuard, egress: config.egress });
      sessionBound = makeSessionBound({
        mode,
        pool,
        connectionString,
        config,
        logger,
        onWork: () => worker?.wake(),
      });
      liveness = sessionBound.liveness;
      // as every start-up step that needs the database: it may go away between them
      await starting(() => liveness!.start());
      const w = makeWorker({
        pool,
        sender,
        // without LISTEN the poll is all there is: the mode's own, shorter (docs/database.md)
        config: { ...config, worker: { ...config.worker, pollIntervalMs: mode.pollIntervalMs } },
        logger: logger.child({ component: "worker" }),
        telemetry: metrics.worker,
        tracer: tracing.attempts,
        secretBox,
        redactor,
        operational,
        liveness,
        // broker destinations' hosts are vetted as HTTP receivers' are
        ssrfGuard,
      });
      worker = w;
      listener = sessionBound.listener;
      if (listener) await starting(() => listener!.start());
      w.start();
      maintenance = makeMaintenance({
        pool,
        logger: logger.child({ component: "maintenance" }),
        intervalMs: Math.min(config.worker.maintenanceIntervalMs, config.health.statsIntervalMs),
        lock: sessionBound.maintenanceLock,
        tasks: maintenanceTasks(
          config,
          secretBox,
          redactor,
          logger.child({ component: "maintenance" }),
        ),
      });
      maintenance.start();
      // background tasks (recover, replay-missing, bulk replay: docs/recovery.md)
      replays = makeReplayRunner({
        pool,
        logger: logger.child({ component: "replays" }),
        defaultMaxAttempts: config.delivery.maxAttempts,
      });
      replays.start();
    }
    return {
      apiUrl,
      generatedAdminKey,
      connectionString,
      embedded: embedded !== null,
      pool,
      worker,
      api,
      stop() {
        stopping ??= stopAll();
        return stopping;
      },
    };
  } catch (err) {
    await stopAll().catch(() => undefined);
    throw startupRefusal(err);
  }
}
