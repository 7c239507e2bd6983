/**
 * A delivery worker's loop: claims due deliveries in batches, sends them concurrently (up
 * to `concurrency` requests at once; the claim already respects each endpoint's in-flight
 * limit), and hands each outcome to the attempt recorder, which feeds the batched result
 * writer. Preparing a request (signing, headers) is prepare-request.ts; turning an outcome
 * into a result is record-attempt.ts; writing results back is result-writer.ts.
 *
 * Loop: claim as many rows as there are free slots → start their requests → if the claim
 * came back full, claim again as soon as slots free up; otherwise sleep until NOTIFY,
 * a finished request (endpoint room may have opened) or the poll interval. Once per poll
 * interval it also hands back the rows of claims whose worker is gone (its liveness lock
 * is free) or whose lease ran out (docs/worker-liveness.md). Each claim's lease row is
 * deleted with the write of its last result.
 *
 * Liveness: with a `liveness`, every claim records this worker's lock number, and while
 * the lock is not held (its connection was lost) the worker claims nothing: other workers
 * may be handing its claims back. Requests already running go on; their results are
 * written only where the row still carries their claim token.
 *
 * Database outages (docs/reliability.md): a claim that fails waits a backoff with jitter
 * before the next one instead of the poll interval; a claim whose answer was lost may have
 * taken rows, which its lease hands back. Results that cannot be written stay with the
 * result writer, which retries them until their lease ends.
 *
 * stop(): no more claims; in-flight requests get until the drain deadline, their results
 * are written; requests still running then are aborted and their rows released (due
 * again at once, no attempt used). Safe to call twice.
 */
import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import type { Config } from "../config.ts";
import type { Pool } from "../db/pool.ts";
import { isDatabaseUnavailable } from "../db/unavailable.ts";
import { AttemptAbort, type HttpSender } from "../delivery/http-sender.ts";
import { applySuccessRule } from "../delivery/success-rule.ts";
import type { OperationalTarget } from "../domain/operational-events.ts";
import { ErrorKind } from "../domain/retry-policy.ts";
import { makeBackoff } from "../lib/backoff.ts";
import { makeWakeableSleep } from "../lib/wakeable-sleep.ts";
import type { Logger } from "../logger.ts";
import { type ClaimedDelivery, claimDeliveries } from "../queue/claim-deliveries.ts";
import type { DeliveryResult } from "../queue/record-results.ts";
import { releaseDeliveries, releaseLostClaims } from "../queue/release-deliveries.ts";
import type { Redactor } from "../security/redact.ts";
import type { SecretBox } from "../security/secret-box.ts";
import { LIVENESS, type Liveness } from "./liveness.ts";
import { makeRequestPreparer } from "./prepare-request.ts";
import { makeAttemptRecorder } from "./record-attempt.ts";
import { makeResultWriter } from "./result-writer.ts";

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
  sender: HttpSender;
  config: Pick<Config, "delivery" | "health" | "worker">;
  logger: Logger;
  /** Called after each batch of results is written (metrics, tests). */
  onResults?: (results: DeliveryResult[]) => void;
  /** Called with the size of every claim that took rows (metrics). */
  onClaim?: (size: number) => void;
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
}

interface Running {
  claim: ClaimedDelivery;
  token: string;
  /** aborted by the sender at the attempt's deadline, or by stop() */
  abort: AttemptAbort;
  /** stop() gave up on this request: its row is released, not recorded */
  released: boolean;
  /** performance.now() at which the row's lease ends at the latest */
  leaseEndsAt: number;
}

export function makeWorker(options: WorkerOptions): Worker {
  const { pool, sender, logger, liveness } = options;
  const { worker: cfg, delivery: defaults } = options.config;
  const id = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  const sleeper = makeWakeableSleep();
  const writer = makeResultWriter({
    pool,
    logger,
    flushBatch: cfg.flushBatch,
    flushIntervalMs: cfg.flushIntervalMs,
    health: options.config.health,
    operational: options.operational ?? null,
    onWritten: (batch) => {
      options.onResults?.(batch);
      // Written results free in-flight room in the database: claim again.
      sleeper.wake();
    },
  });
  const preparer = makeRequestPreparer({
    secretBox: options.secretBox,
    isSensitive: options.redactor.isSensitive,
    logger,
  });
  const running = new Map<number, Running>();
  const recorder = makeAttemptRecorder({
    // each result goes with its lease's end: past it the writer stops retrying it
    writer: { add: (r) => writer.add(r, running.get(r.deliveryId)?.leaseEndsAt) },
    redactor: options.redactor,
    defaults,
    operational: options.operational ?? null,
  });
  const claimBackoff = makeBackoff({ baseMs: Math.min(cfg.pollIntervalMs, 100), capMs: 5_000 });
  /** per claim token: how many of its rows have no result handed to the writer yet */
  const openClaims = new Map<string, number>();
  let stopping = false;
  let loop: Promise<void> | null = null;
  let stopped: Promise<void> | null = null;
  let lastClaimFull = false;
  let lastLostCheck = 0;

  async function runLoop(): Promise<void> {
    while (!stopping) {
      if (Date.now() - lastLostCheck >= cfg.pollIntervalMs) {
        lastLostCheck = Date.now();
        // Rows of claims whose worker died come back here (any worker may do it); the
        // statement's NOTIFY wakes whoever has room for them, this worker included.
        await releaseLostClaims(pool, {
          checkOwners: !liveness || liveness.heldForMs() >= LIVENESS.judgeAfterMs,
          heartbeatStaleMs: cfg.heartbeatStaleMs,
        }).catch((err) =>
          logger[isDatabaseUnavailable(err) ? "warn" : "error"](
            { err },
            "handing back lost claims failed",
          ),
        );
      }
      if (liveness && !liveness.held) {
        // Our lock is gone: our claims may be handed back as we make them. Wait for it.
        await sleeper.sleep(cfg.pollIntervalMs);
        continue;
      }
      const free = cfg.concurrency - running.size;
      // Wait for a meaningful number of free slots rather than claiming one row at a time.
      const worthClaiming = free >= Math.min(cfg.claimBatch, Math.ceil(cfg.concurrency / 4));
      if (worthClaiming) {
        const limit = Math.min(free, cfg.claimBatch);
        try {
          const claimed = await claimBatch(limit);
          if (claimBackoff.failures > 0)
            logger.info({ failures: claimBackoff.failures }, "claims work again");
          claimBackoff.reset();
          // A full claim means more may be due: claim again as slots free up. Otherwise new
          // work arrives by NOTIFY, and endpoint room freed by results wakes us after writes.
          lastClaimFull = claimed === limit;
          if (lastClaimFull) continue;
        } catch (err) {
          lastClaimFull = false;
          const waitMs = claimBackoff.next();
          if (isDatabaseUnavailable(err)) {
            logger.warn(
              { err, failures: claimBackoff.failures, waitMs },
              "database unreachable; claim retried",
            );
          } else {
            logger.error({ err, waitMs }, "claim failed");
          }
          await sleepUnlessStopping(waitMs);
          continue;
        }
      }
      await sleeper.sleep(cfg.pollIntervalMs);
    }
  }

  /** A backoff wait: NOTIFY does not cut it short (the database is what failed), stop() does. */
  async function sleepUnlessStopping(ms: number): Promise<void> {
    const until = performance.now() + ms;
    while (!stopping && performance.now() < until) await sleeper.sleep(until - performance.now());
  }

  async function claimBatch(limit: number): Promise<number> {
    const token = randomUUID();
    // the lease starts when PostgreSQL runs the claim, after this moment
    const claimedAt = performance.now();
    const claims = await claimDeliveries(pool, {
      workerId: id,
      workerLock: liveness?.lock ?? null,
      claimToken: token,
      limit,
      defaultMaxInFlight: defaults.maxInFlight,
      defaultTimeoutMs: defaults.timeoutMs,
      leaseMarginMs: cfg.leaseMarginMs,
    });
    if (claims.length > 0) {
      options.onClaim?.(claims.length);
      openClaims.set(token, claims.length);
    }
    for (const claim of claims) {
      const entry: Running = {
        claim,
        token,
        abort: new AttemptAbort(),
        released: false,
        leaseEndsAt: claimedAt + claim.timeoutMs + cfg.leaseMarginMs,
      };
      running.set(claim.id, entry);
      void deliver(entry);
    }
    return claims.length;
  }

  async function deliver(entry: Running): Promise<void> {
    const { claim } = entry;
    try {
      const prepared = preparer.prepare(claim);
      if (!prepared.ok) {
        // Nothing can be sent: a secret sealed under a key this process lacks (retried with
        // backoff, then dead-lettered), or a payload without a field the URL template needs
        // (a dead letter). Recorded as an attempt, so the operator sees it and no row circles
        // through lease expiries forever. (The error names the field, never its value.)
        const signing = prepared.outcome.errorKind === ErrorKind.signing;
        const what = prepared.outcome.error?.startsWith("URL token")
          ? "URL token"
          : "signing secret";
        logger[signing ? "error" : "warn"](
          { err: prepared.error, endpointId: claim.endpointId, deliveryId: claim.id },
          signing ? `${what} could not be opened` : "nothing could be sent",
        );
        recorder.record(claim, entry.token, prepared.outcome, finishOne(entry.token));
        return;
      }
      const sent = await sender.send({ ...prepared.request, abort: entry.abort });
      if (entry.released) {
        // Aborted by the drain deadline: released by stop(), not counted as an attempt.
        return;
      }
      // a 2xx may still be a refusal, by the endpoint's success rule
      const outcome = applySuccessRule(sent, claim.successRule);
      recorder.record(claim, entry.token, outcome, finishOne(entry.token), prepared);
    } catch (err) {
      logger.error({ err, deliveryId: claim.id }, "delivery crashed; its lease will bring it back");
    } finally {
      if (!entry.released) running.delete(claim.id);
      if (lastClaimFull || stopping) sleeper.wake();
    }
  }

  /** Counts one more row of a claim as done; true for its last one. */
  function finishOne(token: string): boolean {
    const left = (openClaims.get(token) ?? 1) - 1;
    if (left > 0) {
      openClaims.set(token, left);
      return false;
    }
    openClaims.delete(token);
    return true;
  }

  async function drain(): Promise<void> {
    stopping = true;
    sleeper.wake();
    await loop;
    const deadline = Date.now() + cfg.shutdownTimeoutMs;
    while (running.size > 0 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 10));
    }
    const unfinished = [...running.values()];
    for (const entry of unfinished) {
      entry.released = true;
      entry.abort.abort();
    }
    // If the database is unreachable, results cannot be written: give up after a grace
    // period rather than hang; the rows are still leased and will be retried.
    const flushed = await Promise.race([
      writer.flush().then(() => true),
      new Promise<false>((r) =>
        setTimeout(() => r(false), Math.max(5_000, deadline - Date.now())).unref(),
      ),
    ]);
    if (!flushed) {
      logger.error(
        { waiting: writer.waiting },
        "could not write results before exit; leases will retry them",
      );
      return;
    }
    if (unfinished.length > 0) {
      const released = await releaseDeliveries(
        pool,
        unfinished.map((e) => ({ deliveryId: e.claim.id, claimToken: e.token })),
      );
      logger.warn({ released }, "requests still running at the drain deadline were released");
    }
    running.clear();
  }

  return {
    id,
    start() {
      if (loop || stopping) return;
      loop = runLoop();
    },
    stop() {
      stopped ??= drain();
      return stopped;
    },
    wake() {
      sleeper.wake();
    },
    get inFlight() {
      return running.size;
    },
  };
}
