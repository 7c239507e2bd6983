/**
 * A worker's liveness without a session of its own (docs/database.md): behind a
 * transaction pooler with no direct URL, a session advisory lock would live on a server
 * connection the pooler shares, so the worker writes a heartbeat row instead
 * (src/queue/worker-heartbeat.ts), one short statement on the pool every fifth of the
 * threshold (HOOKRELAY_HEARTBEAT_STALE_MS, default 10 s: a beat every 2 s). Other workers
 * hand its claims back once the row is older than the threshold.
 *
 * The worker counts itself alive while its last answered beat began less than half the
 * threshold ago; past that it claims nothing (another worker may be handing its claims
 * back soon) until a beat is answered again, under the same number, so the claims nobody
 * handed back stay its own. The same contract as the advisory lock (src/worker/liveness.ts).
 */
import { hostname } from "node:os";
import type { Pool } from "../db/pool.ts";
import type { Logger } from "../logger.ts";
import { beat, endBeats } from "../queue/worker-heartbeat.ts";
import { nextWorkerLock } from "../queue/worker-lock.ts";
import { LIVENESS, type Liveness } from "./liveness.ts";

export interface HeartbeatLivenessOptions {
  pool: Pool;
  logger: Logger;
  /** a row older than this is a gone worker (HOOKRELAY_HEARTBEAT_STALE_MS) */
  staleMs: number;
  /** called each time the worker counts itself alive again after a gap (it claims again) */
  onHeld?: () => void;
  /** judge other workers only after being alive this long (default LIVENESS.judgeAfterMs) */
  judgeAfterMs?: number;
}

export function makeHeartbeatLiveness(options: HeartbeatLivenessOptions): Liveness {
  const { pool, logger, staleMs } = options;
  const beatMs = Math.max(Math.floor(staleMs / 5), 50);
  const aliveForMs = Math.floor(staleMs / 2);
  const workerId = `${hostname()}:${process.pid}`;
  let lock: number | null = null;
  /** when the last answered beat was sent (performance.now()) */
  let lastAnswered: number | null = null;
  let heldSince: number | null = null;
  let stopped = true;
  let timer: NodeJS.Timeout | null = null;
  let failing = false;

  const alive = () => lastAnswered !== null && performance.now() - lastAnswered < aliveForMs;

  async function beatOnce(): Promise<void> {
    const sent = performance.now();
    const wasAlive = alive();
    let timeout: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        beat(pool, lock!, workerId),
        new Promise((_, reject) => {
          timeout = setTimeout(
            () => reject(new Error(`no heartbeat answer within ${aliveForMs} ms`)),
            aliveForMs,
          );
          timeout.unref();
        }),
      ]);
    } finally {
      clearTimeout(timeout);
    }
    lastAnswered = sent;
    if (!wasAlive) {
      heldSince = sent;
      if (failing) {
        logger.info({ lock }, "heartbeat answered again; claiming again");
        options.onHeld?.();
      }
    }
    failing = false;
  }

  function schedule(): void {
    if (stopped) return;
    timer = setTimeout(() => {
      timer = null;
      beatOnce().then(schedule, (err) => {
        if (!failing) logger.warn({ err, lock }, "heartbeat failed; retrying");
        failing = true;
        if (!alive()) heldSince = null;
        schedule();
      });
    }, beatMs);
    timer.unref();
  }

  return {
    get lock() {
      return lock;
    },
    get held() {
      return alive();
    },
    heldForMs() {
      if (!alive() || heldSince === null) return 0;
      return performance.now() - heldSince;
    },
    judgeAfterMs: options.judgeAfterMs ?? LIVENESS.judgeAfterMs,
    async start() {
      if (!stopped) return;
      lock ??= await nextWorkerLock(pool);
      await beatOnce();
      stopped = false;
      schedule();
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      if (timer) clearTimeout(timer);
      timer = null;
      lastAnswered = null;
      heldSince = null;
      if (lock !== null) await endBeats(pool, lock).catch(() => undefined);
    },
  };
}
