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
 * start() resolves once the lock is held the first time, and fails if the database cannot
 * be reached then. stop() closes the connection, which releases the lock; safe twice.
 */
import pg from "pg";
import { clientKeepAlive } from "../db/keepalive.ts";
import { pgConnection } from "../db/tls.ts";
import type { Logger } from "../logger.ts";
import { applyLivenessSettings, nextWorkerLock, tryWorkerLock } from "../queue/worker-lock.ts";

export interface Liveness {
  /** this process's lock number, which its claims record; null until first held */
  readonly lock: number | null;
  /** true while this process holds its lock */
  readonly held: boolean;
  /** how long the lock has been held without a break, ms (0 while not held) */
  heldForMs(): number;
  start(): Promise<void>;
  stop(): Promise<void>;
}

/** The liveness connection's timings, ms. */
export const LIVENESS = {
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
} as const;

export interface LivenessOptions {
  connectionString: string;
  logger: Logger;
  /** called each time the lock is held again after a loss (the worker claims again) */
  onHeld?: () => void;
}

export function makeLiveness(options: LivenessOptions): Liveness {
  const { logger } = options;
  // TLS resolved once, as the URL says (docs/database.md, "TLS")
  const db = pgConnection(options.connectionString);
  const Client = db.explaining(pg.Client);
  let client: pg.Client | null = null;
  let lock: number | null = null;
  let heldSince: number | null = null;
  let stopped = true;
  let timer: NodeJS.Timeout | null = null;
  let backoffMs: number = LIVENESS.reconnectBaseMs;

  const pause = (ms: number) => new Promise((r) => setTimeout(r, ms).unref());

  async function connect(): Promise<void> {
    const c = new Client({
      connectionString: db.connectionString,
      ssl: db.ssl,
      application_name: "hookrelay-liveness",
      ...clientKeepAlive,
    });
    // Before connect: an error on a client without a listener would crash the process.
    c.on("error", (err) => lost(c, err));
    c.on("end", () => lost(c, new Error("liveness connection closed")));
    try {
      await c.connect();
      await applyLivenessSettings(c);
      lock ??= await nextWorkerLock(c);
      let warned = false;
      while (!stopped && !(await tryWorkerLock(c, lock))) {
        if (!warned) logger.info({ lock }, "liveness lock taken by another session; retrying");
        warned = true;
        await pause(LIVENESS.lockRetryMs);
      }
    } catch (err) {
      await c.end().catch(() => undefined);
      throw err;
    }
    if (stopped) {
      await c.end().catch(() => undefined);
      return;
    }
    client = c;
    heldSince = Date.now();
    backoffMs = LIVENESS.reconnectBaseMs;
    scheduleHeartbeat(c);
  }

  /** The connection `c` failed or closed: the lock is gone with it. */
  function lost(c: pg.Client, err: unknown): void {
    if (client !== c) return;
    client = null;
    heldSince = null;
    clearTimer();
    void c.end().catch(() => undefined);
    if (stopped) return;
    logger.warn({ err, lock }, "liveness connection lost; not claiming until the lock is back");
    scheduleReconnect();
  }

  function scheduleReconnect(): void {
    if (stopped || timer) return;
    const delay = backoffMs / 2 + (Math.random() * backoffMs) / 2;
    backoffMs = Math.min(backoffMs * 2, LIVENESS.reconnectCapMs);
    timer = setTimeout(() => {
      timer = null;
      connect().then(
        () => {
          if (client) {
            logger.info({ lock }, "liveness lock held again");
            options.onHeld?.();
          }
        },
        (err) => {
          // once per outage at warn; every retry at debug (a restart takes many)
          const level = backoffMs === LIVENESS.reconnectBaseMs * 2 ? "warn" : "debug";
          logger[level]({ err }, "liveness reconnect failed; retrying with backoff");
          scheduleReconnect();
        },
      );
    }, delay);
    timer.unref();
  }

  function scheduleHeartbeat(c: pg.Client): void {
    timer = setTimeout(async () => {
      timer = null;
      const answered = await Promise.race([
        c.query("select 1").then(
          () => true,
          () => false,
        ),
        pause(LIVENESS.heartbeatTimeoutMs).then(() => false),
      ]);
      if (client !== c) return;
      if (answered) scheduleHeartbeat(c);
      else lost(c, new Error(`no heartbeat answer within ${LIVENESS.heartbeatTimeoutMs} ms`));
    }, LIVENESS.heartbeatMs);
    timer.unref();
  }

  function clearTimer(): void {
    if (timer) clearTimeout(timer);
    timer = null;
  }

  return {
    get lock() {
      return lock;
    },
    get held() {
      return client !== null;
    },
    heldForMs() {
      return heldSince === null ? 0 : Date.now() - heldSince;
    },
    async start() {
      if (!stopped) return;
      stopped = false;
      try {
        await connect();
      } catch (err) {
        stopped = true;
        throw err;
      }
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      clearTimer();
      const c = client;
      client = null;
      heldSince = null;
      await c?.end().catch(() => undefined);
    },
  };
}
