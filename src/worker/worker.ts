/**
 * A delivery worker, composed of three parts (docs/architecture.md, "The delivery
 * pipeline"):
 *
 * - the claim loop (claim-loop.ts): claims due deliveries for the free slots (up to
 *   `concurrency` in flight; the claim respects each endpoint's in-flight limit), sleeps
 *   until NOTIFY, a result or its poll interval, and hands back lost claims;
 * - the delivery pipeline (delivery-pipeline.ts): per claimed row, its transport
 *   (delivery/transport.ts: HTTP, RabbitMQ or NATS JetStream) prepares and sends it, the attempt recorder
 *   (record-attempt.ts) turns the outcome into a result, the result writer
 *   (result-writer.ts) writes results in batches. Each claim's lease row is deleted with
 *   the write of its last result;
 * - the drain (drain.ts): stop() stops claiming, waits for requests in flight until the
 *   drain deadline, writes their results and releases the rows still running.
 *
 * Liveness: with a `liveness`, every claim records this worker's lock number, and while
 * the lock is not held (its connection was lost) the worker claims nothing: other workers
 * may be handing its claims back. Requests already running go on; their results are
 * written only where the row still carries their claim token.
 *
 * Database outages (docs/reliability.md): a failed claim waits a backoff; a claim whose
 * answer was lost may have taken rows, which its lease hands back. Results that cannot be
 * written stay with the result writer, which retries them until their lease ends.
 */
import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import type { Config } from "../config.ts";
import type { Pool } from "../db/pool.ts";
import { DATABASE_CLOCK, type SqlClock } from "../db/sql/clock.ts";
import { makeAmqpTransport } from "../delivery/amqp/amqp-transport.ts";
import { makeHttpTransport } from "../delivery/http/http-transport.ts";
import type { HttpSender } from "../delivery/http-sender.ts";
import { makeNatsTransport } from "../delivery/nats/nats-transport.ts";
import type { TransportRegistry } from "../delivery/transport.ts";
import type { OperationalTarget } from "../domain/operational-events.ts";
import { INTERVAL_MS } from "../domain/partition-interval.ts";
import type { Logger } from "../logger.ts";
import { claimDeliveries } from "../queue/claim-deliveries.ts";
import { ClaimWindow } from "../queue/claim-window.ts";
import { releaseDeliveries, releaseLostClaims } from "../queue/release-deliveries.ts";
import type { Redactor } from "../security/redact.ts";
import type { SecretBox } from "../security/secret-box.ts";
import { makeSsrfGuard, type SsrfGuard } from "../security/ssrf-guard.ts";
import type { AttemptTracer } from "./attempt-tracer.ts";
import { makeClaimLoop } from "./claim-loop.ts";
import { makeDeliveryPipeline } from "./delivery-pipeline.ts";
import { drain } from "./drain.ts";
import type { Liveness } from "./liveness.ts";
import { startLoopLateness } from "./loop-lateness.ts";
import { makeAttemptRecorder } from "./record-attempt.ts";
import { makeResultWriter } from "./result-writer.ts";
import { NO_TELEMETRY, type WorkerTelemetry } from "./worker-telemetry.ts";

export interface Worker {
  readonly id: string;
  start(): void;
  /** Drains and stops; resolves when every result is written and every unsent row released. */
  stop(): Promise<void>;
  /** Cuts the idle sleep short (NOTIFY arrived). */
  wake(): void;
  readonly inFlight: number;
}

export interface WorkerOptions {
  pool: Pool;
  /** the HTTP sender the "http" transport sends through; closed by its maker */
  sender: HttpSender;
  /**
   * Transports of other destination kinds, or replacements (tests); the default registry
   * has the HTTP transport over `sender` and the RabbitMQ and NATS ones
   * (docs/destinations.md). The worker's stop() closes them all, after the drain.
   */
  transports?: Partial<TransportRegistry>;
  /**
   * Vets broker hosts (the HTTP sender has its own); absent: a guard without an
   * allow-list, which refuses every private address.
   */
  ssrfGuard?: SsrfGuard;
  config: Pick<Config, "delivery" | "health" | "worker"> & Partial<Pick<Config, "partitions">>;
  logger: Logger;
  /** what the worker reports (metrics: ops/metrics.ts's `worker`); default nothing */
  telemetry?: WorkerTelemetry;
  /** each attempt's trace span (ops/tracing.ts's `attempts`); default NO_TRACING */
  tracer?: AttemptTracer;
  /** opens signing secrets sealed at rest (makeSecretBox(undefined): stored plain) */
  secretBox: SecretBox;
  /** masks sensitive values in stored error texts, response bodies and URLs */
  redactor: Redactor;
  /** operational webhooks (queue/operational-events.ts); null or absent: off */
  operational?: OperationalTarget | null;
  /**
   * This process's liveness lock, started by the caller (runtime.ts) and stopped after the
   * worker. Without one (in-process tests) claims come back only by their lease.
   */
  liveness?: Liveness;
  /**
   * The time its statements take as "now" (claims, result writes, hand-backs:
   * db/sql/clock.ts). Default the database's now(); tests move it forward instead of
   * sleeping.
   */
  clock?: SqlClock;
}

export function makeWorker(options: WorkerOptions): Worker {
  const { pool, logger, liveness } = options;
  const { worker: cfg, delivery: defaults } = options.config;
  const telemetry = options.telemetry ?? NO_TELEMETRY;
  const operational = options.operational ?? null;
  const clock = options.clock ?? DATABASE_CLOCK;
  const id = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  const transports: TransportRegistry = {
    http: makeHttpTransport({
      sender: options.sender,
      secretBox: options.secretBox,
      isSensitive: options.redactor.isSensitive,
      logger,
    }),
    ...brokerTransports(options),
    ...options.transports,
  };
  const writer = makeResultWriter({
    pool,
    logger,
    flushBatch: cfg.flushBatch,
    flushIntervalMs: cfg.flushIntervalMs,
    health: options.config.health,
    defaultMaxInFlight: defaults.maxInFlight,
    operational,
    sqlClock: clock,
    onWritten: (batch) => {
      telemetry.written(batch);
      // Written results free in-flight room in the database: claim again.
      loop.wake();
    },
  });
  // the event loop's own lateness, read back per attempt: the part of its latency that was
  // the worker's doing, which the adaptive limit does not blame on the receiver
  // (docs/adaptive-concurrency.md, "The worker's own saturation")
  const lateness = startLoopLateness();
  const recorder = makeAttemptRecorder({
    lateness,
    // each result goes with its lease's end: past it the writer stops retrying it
    writer: { add: (r) => writer.add(r, pipeline.leaseEndsAt(r.deliveryId)) },
    redactor: options.redactor,
    defaults,
    operational,
  });
  const pipeline = makeDeliveryPipeline({
    transports,
    recorder,
    logger,
    leaseMarginMs: cfg.leaseMarginMs,
    tracer: options.tracer,
    onSettled: () => loop.slotFreed(),
  });
  // the claim reads whole periods of deliveries (docs/history.md, "The claim's periods")
  const claimWindow = new ClaimWindow(INTERVAL_MS[options.config.partitions?.interval ?? "day"]);
  const loop = makeClaimLoop({
    pollIntervalMs: cfg.pollIntervalMs,
    concurrency: cfg.concurrency,
    claimBatch: cfg.claimBatch,
    inFlight: () => pipeline.inFlight,
    async claim(limit) {
      const token = randomUUID();
      // the lease starts when PostgreSQL runs the claim, after this moment
      const claimedAt = performance.now();
      const claims = await claimDeliveries(pool, {
        workerId: id,
        workerLock: liveness?.lock ?? null,
        claimToken: token,
        limit,
        defaultMaxInFlight: defaults.maxInFlight,
        defaultAdaptiveConcurrency: options.config.health.adaptiveConcurrency,
        defaultTimeoutMs: defaults.timeoutMs,
        leaseMarginMs: cfg.leaseMarginMs,
        now: clock(),
        window: claimWindow,
        // answered rows waiting for their write hold no room at the receiver
        unwritten: writer.unwritten(),
      });
      if (claims.length > 0) telemetry.claimed(claims.length);
      pipeline.start(claims, token, claimedAt);
      return claims.length;
    },
    releaseLost: (checkOwners) =>
      releaseLostClaims(pool, {
        checkOwners,
        heartbeatStaleMs: cfg.heartbeatStaleMs,
        now: clock(),
      }),
    ...(liveness && {
      liveness: {
        get held() {
          return liveness.held;
        },
        judges: () => liveness.heldForMs() >= liveness.judgeAfterMs,
      },
    }),
    logger,
  });
  let stopped: Promise<void> | null = null;

  return {
    id,
    start() {
      if (!stopped) loop.start();
    },
    stop() {
      stopped ??= drain({
        stopClaims: () => loop.stop(),
        pipeline,
        writer,
        release: (rows) => releaseDeliveries(pool, rows, clock()),
        shutdownTimeoutMs: cfg.shutdownTimeoutMs,
        logger,
      }).then(async () => {
        // the broker connections go with the worker (every result is written by now)
        await Promise.all(Object.values(transports).map((t) => t?.close()));
        lateness.stop();
      });
      return stopped;
    },
    wake() {
      loop.wake();
    },
    get inFlight() {
      return pipeline.inFlight;
    },
  };
}

/** The RabbitMQ and NATS JetStream transports, over the worker's secret box and SSRF guard. */
function brokerTransports(options: WorkerOptions): Partial<TransportRegistry> {
  const deps = {
    secretBox: options.secretBox,
    ssrfGuard: options.ssrfGuard ?? makeSsrfGuard({ allowlist: [] }),
  };
  return { amqp: makeAmqpTransport(deps), nats: makeNatsTransport(deps) };
}
