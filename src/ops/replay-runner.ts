/**
 * The replay runner (docs/recovery.md): runs background tasks in any worker process. Every
 * `pollIntervalMs` it takes the running tasks no live runner holds (up to `maxTasks` at
 * once) under a lease, and runs each in its own loop:
 *
 * 1. once, count the task's total;
 * 2. wait while the endpoint still has a batch's worth of replayed rows queued (the worker
 *    has not caught up: replays never pile up more than about a batch ahead of it);
 * 3. run a batch (replay-batch.ts): at most `batchOf(rate)` rows made due, spread at the
 *    task's pace, the cursor and progress stored, the lease renewed, in one statement;
 * 4. sleep until the batch's share of time at the pace is over, and go on.
 *
 * A task ends when its window is done (finished), when it is canceled (its next batch finds
 * it so), or when a batch fails for a reason other than the database being unreachable
 * (failed). A runner that stops gives its tasks up (another takes them at once); one that
 * dies keeps them until their lease lapses (`leaseMs`); either way the next runner goes on
 * from the stored cursor.
 */
import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import type { Pool } from "../db/pool.ts";
import { isDatabaseUnavailable } from "../db/unavailable.ts";
import { makeWakeableSleep } from "../lib/wakeable-sleep.ts";
import type { Logger } from "../logger.ts";
import {
  type BatchResult,
  countTotal,
  failTask,
  queuedReplays,
  releaseTask,
  renewLease,
  runBatch,
  type TakenTask,
  takeTask,
} from "./replay-batch.ts";

/** Most rows one batch makes due, whatever the pace. */
export const MAX_BATCH = 500;
/** Messages one batch looks at, at most: bounds a batch's work where few rows match. */
export const SCAN = 2_000;

/**
 * The batch at a pace of `rate` rows per second: a second's worth (at least one, at most
 * MAX_BATCH), and how long it should take.
 */
export function batchOf(rate: number): { rows: number; intervalMs: number } {
  const rows = Math.max(1, Math.min(MAX_BATCH, Math.floor(rate)));
  return { rows, intervalMs: (rows / rate) * 1000 };
}

export interface ReplayRunnerOptions {
  pool: Pool;
  logger: Logger;
  /** the attempt budget of a replayed row whose endpoint has none of its own */
  defaultMaxAttempts: number;
  /** how often it looks for tasks to take. Default 1_000. */
  pollIntervalMs?: number;
  /** a lease lasts this long past each batch. Default 30_000. */
  leaseMs?: number;
  /** tasks run at once by this runner. Default 4. */
  maxTasks?: number;
  /** called after each batch (tests, the bench) */
  onBatch?: (taskId: string, result: BatchResult) => void;
}

export interface ReplayRunner {
  start(): void;
  /** Stops taking tasks, lets each batch under way end, and gives the tasks up. */
  stop(): Promise<void>;
  /** Looks for tasks now instead of at the next poll. */
  wake(): void;
}

export function makeReplayRunner(options: ReplayRunnerOptions): ReplayRunner {
  const { pool, logger } = options;
  const pollIntervalMs = options.pollIntervalMs ?? 1_000;
  const leaseMs = options.leaseMs ?? 30_000;
  const maxTasks = options.maxTasks ?? 4;
  const holder = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  const poller = makeWakeableSleep();
  const running = new Map<string, { loop: Promise<void>; wake: () => void }>();
  let loop: Promise<void> | null = null;
  let stopping = false;

  async function runTask(task: TakenTask, sleeper: ReturnType<typeof makeWakeableSleep>) {
    const log = logger.child({ task: task.id });
    const { rows, intervalMs } = batchOf(task.ratePerSecond);
    try {
      if (task.total === null) await countTotal(pool, task.id);
      while (!stopping) {
        if ((await queuedReplays(pool, task.endpointId, rows)) >= rows) {
          if (!(await renewLease(pool, task.id, holder, leaseMs))) return;
          await sleeper.sleep(intervalMs);
          continue;
        }
        const started = performance.now();
        const result = await runBatch(pool, {
          id: task.id,
          holder,
          leaseMs,
          batch: rows,
          scan: Math.max(SCAN, rows),
          defaultMaxAttempts: options.defaultMaxAttempts,
        });
        if (!result) return;
        options.onBatch?.(task.id, result);
        if (result.status !== "running") {
          log.info({ status: result.status }, "background task ended");
          return;
        }
        await sleeper.sleep(Math.max(0, intervalMs - (performance.now() - started)));
      }
    } catch (err) {
      if (isDatabaseUnavailable(err)) {
        // kept under its lease: this runner (or, once it lapses, another) takes it again
        log.warn({ err }, "background task paused: the database is unreachable");
        return;
      }
      log.error({ err }, "background task failed");
      await failTask(pool, task.id, holder, err instanceof Error ? err.message : String(err)).catch(
        (e) => log.warn({ err: e }, "could not record the background task's failure"),
      );
    } finally {
      if (stopping) await releaseTask(pool, task.id, holder).catch(() => undefined);
    }
  }

  async function takeFreeTasks(): Promise<void> {
    while (!stopping && running.size < maxTasks) {
      const task = await takeTask(pool, holder, leaseMs, [...running.keys()]);
      if (!task) return;
      const sleeper = makeWakeableSleep();
      const entry = {
        wake: () => sleeper.wake(),
        loop: runTask(task, sleeper).finally(() => running.delete(task.id)),
      };
      running.set(task.id, entry);
    }
  }

  return {
    start() {
      if (loop) return;
      stopping = false;
      loop = (async () => {
        while (!stopping) {
          await takeFreeTasks().catch((err) =>
            logger[isDatabaseUnavailable(err) ? "warn" : "error"](
              { err },
              "looking for background tasks failed",
            ),
          );
          await poller.sleep(pollIntervalMs);
        }
      })();
    },
    async stop() {
      if (!loop) return;
      stopping = true;
      poller.wake();
      for (const r of running.values()) r.wake();
      await loop;
      await Promise.all([...running.values()].map((r) => r.loop));
      loop = null;
    },
    wake() {
      poller.wake();
    },
  };
}
