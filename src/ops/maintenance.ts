/**
 * Periodic housekeeping, run by exactly one process at a time: each tick tries a
 * session-level advisory lock and skips the tick if another process holds it. Tasks are a
 * list so later areas (percentiles, retention, alerts) plug in without touching the loop.
 *
 * A tick that fails because the database is unreachable (a restart, a failover) is logged
 * and the runner waits for the next one; it never ends the loop or the process. The lock
 * is PostgreSQL's session lock: if its connection dies, the server releases it, and the next
 * tick of any process takes it again (docs/reliability.md). Behind a transaction pooler
 * the session lock is taken through the direct URL, or, without one, replaced by a lease
 * row (src/ops/maintenance-lease.ts, docs/database.md).
 */
import type { Pool } from "../db/pool.ts";
import { isDatabaseUnavailable } from "../db/unavailable.ts";
import { makeWakeableSleep } from "../lib/wakeable-sleep.ts";
import type { Logger } from "../logger.ts";

const MAINTENANCE_LOCK = 0x686f6f6c;

export interface MaintenanceTask {
  name: string;
  /** run at most this often; undefined = every tick */
  everyMs?: number;
  run(pool: Pool): Promise<void>;
}

/** Who runs the tasks this tick: tryTake() resolves to a release function, or null. */
export interface MaintenanceLock {
  tryTake(): Promise<(() => Promise<void>) | null>;
}

/** PostgreSQL's session advisory lock, on a connection of `pool` held for the tick. */
export function sessionLock(pool: Pool): MaintenanceLock {
  return {
    async tryTake() {
      const client = await pool.connect();
      // Held idle while the tasks run: its loss must not become an unhandled 'error' event
      // (makePool's pools listen already; this holds for any pool).
      let lost: Error | undefined;
      const onLost = (err: Error) => {
        lost = err;
      };
      client.on("error", onLost);
      const done = () => {
        client.off("error", onLost);
        client.release(lost);
      };
      try {
        const { rows } = await client.query("select pg_try_advisory_lock($1::bigint) as locked", [
          MAINTENANCE_LOCK,
        ]);
        if (!rows[0].locked) {
          done();
          return null;
        }
      } catch (err) {
        done();
        throw err;
      }
      return async () => {
        try {
          await client.query("select pg_advisory_unlock($1::bigint)", [MAINTENANCE_LOCK]);
        } finally {
          done();
        }
      };
    },
  };
}

export interface Maintenance {
  start(): void;
  stop(): Promise<void>;
  /** Runs one tick now (if the lock is free); true if it ran. */
  runOnce(): Promise<boolean>;
}

export function makeMaintenance(options: {
  pool: Pool;
  logger: Logger;
  /** how often the runner wakes; tasks with a longer everyMs skip ticks */
  intervalMs: number;
  tasks: MaintenanceTask[];
  /** Default: the session lock on `pool` (a direct connection). */
  lock?: MaintenanceLock;
}): Maintenance {
  const { pool, logger } = options;
  const sleeper = makeWakeableSleep();
  let loop: Promise<void> | null = null;
  let stopping = false;
  const lastRun = new Map<string, number>();

  const lock = options.lock ?? sessionLock(pool);

  async function runOnce(): Promise<boolean> {
    const release = await lock.tryTake();
    if (!release) return false;
    try {
      for (const task of options.tasks) {
        if (stopping) break;
        const last = lastRun.get(task.name);
        if (task.everyMs !== undefined && last !== undefined && Date.now() - last < task.everyMs)
          continue;
        lastRun.set(task.name, Date.now());
        try {
          await task.run(pool);
        } catch (err) {
          logger[isDatabaseUnavailable(err) ? "warn" : "error"](
            { err, task: task.name },
            "maintenance task failed",
          );
        }
      }
    } finally {
      await release();
    }
    return true;
  }

  return {
    start() {
      if (loop) return;
      loop = (async () => {
        while (!stopping) {
          await runOnce().catch((err) =>
            logger[isDatabaseUnavailable(err) ? "warn" : "error"](
              { err },
              "maintenance tick failed",
            ),
          );
          await sleeper.sleep(options.intervalMs);
        }
      })();
    },
    async stop() {
      stopping = true;
      sleeper.wake();
      await loop;
    },
    runOnce,
  };
}

/** Deletes idempotency records older than the TTL, in batches so no lock is held long. */
export function purgeIdempotencyKeys(ttlMs: number): MaintenanceTask {
  return {
    name: "purge-idempotency-keys",
    async run(pool) {
      for (;;) {
        const { rowCount } = await pool.query(
          `delete from idempotency_keys where ctid in (
             select ctid from idempotency_keys
             where created_at < now() - $1::integer * interval '1 millisecond'
             limit 5000)`,
          [ttlMs],
        );
        if ((rowCount ?? 0) < 5000) return;
      }
    },
  };
}
