/**
 * A worker process's liveness (docs/worker-liveness.md): one dedicated connection that holds
 * the worker's advisory lock (src/queue/worker-lock.ts) for as long as the process lives.
 * When the process dies, its connection closes and PostgreSQL releases the lock; the other
 * workers see that within a poll interval and hand its claims back.
 *
 * The connection is watched: an error or close, or a heartbeat that gets no answer, counts
 * as the lock lost. Then `held` is false (the worker claims nothing: another worker may be
 * handing its claims back already) and the connection is opened again with backoff and
 * jitter, for as long as it takes (a database restart, a failover); the process never exits
 * over it. The lock is taken again under the same number, so the claims nobody handed back
 * meanwhile stay this worker's.
 *
 * The connection is db/dedicated-connection.ts's; this module adds what is taken on it (the
 * session's keepalive settings, the worker number, the lock) and the timings, which tests
 * may shorten (`timings`; the defaults are LIVENESS).
 *
 * start() resolves once the lock is held the first time, and fails if the database cannot
 * be reached then. stop() closes the connection, which releases the lock; safe twice.
 */
import { makeDedicatedConnection, pause } from "../db/dedicated-connection.ts";
import type { Logger } from "../logger.ts";
import { applyLivenessSettings, nextWorkerLock, tryWorkerLock } from "../queue/worker-lock.ts";

export interface Liveness {
  /** this process's lock number, which its claims record; null until first held */
  readonly lock: number | null;
  /** true while this process holds its lock */
  readonly held: boolean;
  /** how long the lock has been held without a break, ms (0 while not held) */
  heldForMs(): number;
  /** judge other workers' locks only once heldForMs() reaches this (LIVENESS.judgeAfterMs) */
  readonly judgeAfterMs: number;
  start(): Promise<void>;
  stop(): Promise<void>;
}

/** The liveness connection's timings, ms. */
export interface LivenessTimings {
  heartbeatMs: number;
  heartbeatTimeoutMs: number;
  reconnectBaseMs: number;
  reconnectCapMs: number;
  lockRetryMs: number;
  judgeAfterMs: number;
}

export const LIVENESS: Readonly<LivenessTimings> = {
  /** a `select 1` this often shows the connection still answers... */
  heartbeatMs: 2_000,
  /** ...and one unanswered for this long counts as the connection lost */
  heartbeatTimeoutMs: 5_000,
  /** reconnect backoff: first delay, doubled up to the cap, each drawn from [d/2, d] */
  reconnectBaseMs: 100,
  reconnectCapMs: 2_000,
  /** the lock is taken by another session for now: try again after this */
  lockRetryMs: 200,
  /**
   * A worker judges other workers' locks only once it has held its own this long: after a
   * database restart every worker reconnects within one capped backoff, and none hands back
   * the claims of another that is still on its way back.
   */
  judgeAfterMs: 3_000,
};

export interface LivenessOptions {
  connectionString: string;
  logger: Logger;
  /** called each time the lock is held again after a loss (the worker claims again) */
  onHeld?: () => void;
  /** any of LIVENESS's timings, for tests that run them faster */
  timings?: Partial<LivenessTimings>;
}

export function makeLiveness(options: LivenessOptions): Liveness {
  const { logger } = options;
  const timings: LivenessTimings = { ...LIVENESS, ...options.timings };
  let lock: number | null = null;
  let heldSince: number | null = null;

  const connection = makeDedicatedConnection({
    connectionString: options.connectionString,
    applicationName: "hookrelay-liveness",
    name: "liveness",
    logger,
    backoff: { baseMs: timings.reconnectBaseMs, capMs: timings.reconnectCapMs },
    check: { intervalMs: timings.heartbeatMs, timeoutMs: timings.heartbeatTimeoutMs },
    async onConnect(c, signal) {
      await applyLivenessSettings(c);
      lock ??= await nextWorkerLock(c);
      let warned = false;
      while (!signal.aborted && !(await tryWorkerLock(c, lock))) {
        if (!warned) logger.info({ lock }, "liveness lock taken by another session; retrying");
        warned = true;
        await pause(timings.lockRetryMs, signal);
      }
    },
    onUp(_c, { reconnected }) {
      heldSince = Date.now();
      if (!reconnected) return;
      logger.info({ lock }, "liveness lock held again");
      options.onHeld?.();
    },
    onLost(err) {
      heldSince = null;
      logger.warn({ err, lock }, "liveness connection lost; not claiming until the lock is back");
    },
  });

  return {
    get lock() {
      return lock;
    },
    get held() {
      return connection.client !== null;
    },
    heldForMs() {
      return heldSince === null || connection.client === null ? 0 : Date.now() - heldSince;
    },
    judgeAfterMs: timings.judgeAfterMs,
    start: () => connection.start(),
    async stop() {
      heldSince = null;
      await connection.stop();
    },
  };
}
