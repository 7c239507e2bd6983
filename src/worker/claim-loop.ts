/**
 * The worker's claim loop: claim as many rows as there are free slots → hand them to the
 * delivery pipeline (the claimer does both) → if the claim came back full, claim again as
 * soon as slots free up; otherwise sleep until NOTIFY (`wake()`), a written batch, a
 * batch of answered requests since the last claim (endpoint room opened: the claim counts
 * successful answers as free before their results are written, docs/delivery.md) or the
 * poll interval. Once per poll interval it also hands back the rows of claims whose worker is
 * gone (its liveness lock is free) or whose lease ran out (docs/worker-liveness.md).
 *
 * Liveness: while this process's lock is not held (its connection was lost) it claims
 * nothing: other workers may be handing its claims back.
 *
 * Database outages (docs/reliability.md): a claim that fails waits a backoff with jitter
 * before the next one instead of the poll interval (NOTIFY does not cut it short: the
 * database is what failed; stop() does).
 */
import { isDatabaseUnavailable } from "../db/unavailable.ts";
import { makeBackoff } from "../lib/backoff.ts";
import { makeWakeableSleep } from "../lib/wakeable-sleep.ts";
import type { Logger } from "../logger.ts";

export interface ClaimLoop {
  start(): void;
  /** No more claims; resolves when the loop has ended (a claim under way finishes first). */
  stop(): Promise<void>;
  /** Cuts the idle sleep short (NOTIFY arrived, results were written). */
  wake(): void;
  /**
   * A request was answered and its slot came free: wakes the loop if it waits for a slot
   * (its last claim was full), stops, or has seen a batch of answers (claimBatch) since its
   * last claim began (their endpoints' room is free for the next claim).
   */
  slotFreed(): void;
}

export interface ClaimLoopOptions {
  /** pollIntervalMs: the idle sleep and the lost-claims check's period */
  pollIntervalMs: number;
  /** concurrency: the most rows in flight; claimBatch: the most rows per claim */
  concurrency: number;
  claimBatch: number;
  /** rows in flight now (the delivery pipeline's) */
  inFlight(): number;
  /** Claims at most `limit` rows and starts them; resolves with how many it took. */
  claim(limit: number): Promise<number>;
  /** Hands back lost claims; `checkOwners`: judge other workers' liveness locks too. */
  releaseLost(checkOwners: boolean): Promise<unknown>;
  /**
   * This process's liveness lock, if it has one: `held` gates claiming, `judges()` says
   * whether it has been held long enough to judge other workers' locks.
   */
  liveness?: { readonly held: boolean; judges(): boolean };
  logger: Pick<Logger, "info" | "warn" | "error">;
  /** the failed-claim backoff, ms (default from min(poll interval, 100) up to 5_000) */
  backoff?: { baseMs: number; capMs: number };
}

export function makeClaimLoop(options: ClaimLoopOptions): ClaimLoop {
  const { pollIntervalMs, concurrency, claimBatch, liveness, logger } = options;
  const sleeper = makeWakeableSleep();
  const claimBackoff = makeBackoff(
    options.backoff ?? { baseMs: Math.min(pollIntervalMs, 100), capMs: 5_000 },
  );
  let stopping = false;
  let loop: Promise<void> | null = null;
  let lastClaimFull = false;
  let lastLostCheck = 0;
  // answers since the last claim began, and how many make a short claim worth repeating:
  // as many as a claim may take. Half as many made more claims of fewer rows each, which
  // cost PostgreSQL per claim and, with two workers, waits on each other's claim rows
  // (scenario 3 with 2 workers fell a tenth: docs/performance.md)
  let answeredSinceClaim = 0;
  const answersWorthClaiming = claimBatch;

  async function runLoop(): Promise<void> {
    while (!stopping) {
      if (Date.now() - lastLostCheck >= pollIntervalMs) {
        lastLostCheck = Date.now();
        // Rows of claims whose worker died come back here (any worker may do it); the
        // statement's NOTIFY wakes whoever has room for them, this worker included.
        await options
          .releaseLost(!liveness || liveness.judges())
          .catch((err) =>
            logger[isDatabaseUnavailable(err) ? "warn" : "error"](
              { err },
              "handing back lost claims failed",
            ),
          );
      }
      if (liveness && !liveness.held) {
        // Our lock is gone: our claims may be handed back as we make them. Wait for it.
        await sleeper.sleep(pollIntervalMs);
        continue;
      }
      const free = concurrency - options.inFlight();
      // Wait for a meaningful number of free slots rather than claiming one row at a time.
      const worthClaiming = free >= Math.min(claimBatch, Math.ceil(concurrency / 4));
      if (worthClaiming) {
        const limit = Math.min(free, claimBatch);
        answeredSinceClaim = 0;
        try {
          const claimed = await options.claim(limit);
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
      await sleeper.sleep(pollIntervalMs);
    }
  }

  /** A backoff wait: NOTIFY does not cut it short (the database is what failed), stop() does. */
  async function sleepUnlessStopping(ms: number): Promise<void> {
    const until = performance.now() + ms;
    while (!stopping && performance.now() < until) await sleeper.sleep(until - performance.now());
  }

  return {
    start() {
      if (loop || stopping) return;
      loop = runLoop();
    },
    async stop() {
      stopping = true;
      sleeper.wake();
      await loop;
    },
    wake() {
      sleeper.wake();
    },
    slotFreed() {
      answeredSinceClaim++;
      if (lastClaimFull || stopping || answeredSinceClaim >= answersWorthClaiming) sleeper.wake();
    },
  };
}
