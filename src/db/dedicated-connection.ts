/**
 * A dedicated PostgreSQL connection that reconnects (docs/reliability.md): one client of
 * its own, outside the pool, for what needs a session that lasts (the worker's liveness
 * lock, LISTEN). TLS is resolved once from the URL (db/tls.ts, docs/database.md "TLS"), TCP
 * keepalive is on (db/keepalive.ts), and an optional `select 1` check catches a connection
 * that no longer answers but was never closed.
 *
 * An error, a close or an unanswered check counts as the connection lost: `onLost` is
 * called and the connection is opened again with backoff and jitter (lib/backoff.ts), for
 * as long as it takes (a database restart, a failover). Each new connection runs
 * `onConnect` (LISTEN, session settings, a lock) before it counts as up; then `onUp` is
 * called. Events of a connection that is not the current one (still connecting, or already
 * replaced) are ignored: a failed connect is retried by whoever asked for it.
 *
 * start() resolves once the first connection is up and fails if it cannot be made (a
 * later start() tries again). stop() aborts a connect under way (the signal `onConnect`
 * gets), cancels a pending reconnect or check and closes the connection; `onLost` is not
 * called for it. Both are safe to call twice.
 */
import pg from "pg";
import { type BackoffOptions, makeBackoff } from "../lib/backoff.ts";
import type { Logger } from "../logger.ts";
import { clientKeepAlive } from "./keepalive.ts";
import { pgConnection } from "./tls.ts";

export interface DedicatedConnectionOptions {
  connectionString: string;
  /** application_name of the session, as pg_stat_activity shows it */
  applicationName: string;
  /** what log lines call the connection ("liveness", "work listener") */
  name: string;
  logger: Logger;
  /** pg's connect timeout, ms; absent: none */
  connectTimeoutMs?: number;
  /** reconnect waits (lib/backoff.ts; its defaults: 100 ms up to 5 s) */
  backoff?: BackoffOptions;
  /** a `select 1` every intervalMs; one unanswered for timeoutMs loses the connection */
  check?: { intervalMs: number; timeoutMs: number };
  /** listeners on a new client, before it connects (e.g. "notification") */
  prepare?(client: pg.Client): void;
  /**
   * Runs on each new connection before it counts as up. Throwing fails this connect (the
   * client is closed); `signal` is aborted by stop(), so a wait inside can end early.
   */
  onConnect?(client: pg.Client, signal: AbortSignal): Promise<void>;
  /** the connection is up; `reconnected`: not the first since start() */
  onUp?(client: pg.Client, info: { reconnected: boolean }): void;
  /** the current connection was lost (not called for stop()); a reconnect follows */
  onLost?(err: unknown): void;
}

export interface DedicatedConnection {
  /** the connection while it is up, else null */
  readonly client: pg.Client | null;
  start(): Promise<void>;
  stop(): Promise<void>;
}

const ignore = () => undefined;

/** Resolves after `ms`, or at once when `signal` is aborted. */
export function pause(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const done = () => {
      clearTimeout(t);
      signal?.removeEventListener("abort", done);
      resolve();
    };
    const t = setTimeout(done, ms);
    t.unref();
    signal?.addEventListener("abort", done, { once: true });
  });
}

export function makeDedicatedConnection(options: DedicatedConnectionOptions): DedicatedConnection {
  const { logger, name } = options;
  const db = pgConnection(options.connectionString);
  const Client = db.explaining(pg.Client);
  const backoff = makeBackoff(options.backoff);
  let client: pg.Client | null = null;
  let stopped = true;
  let everUp = false;
  /** aborted by stop(): ends a connect under way */
  let run = new AbortController();
  /** the pending reconnect or check */
  let timer: NodeJS.Timeout | null = null;

  async function connect(signal: AbortSignal): Promise<void> {
    const c = new Client({
      connectionString: db.connectionString,
      ssl: db.ssl,
      application_name: options.applicationName,
      ...(options.connectTimeoutMs ? { connectionTimeoutMillis: options.connectTimeoutMs } : {}),
      ...clientKeepAlive,
    });
    // Before connect: an error on a client without a listener would crash the process.
    c.on("error", (err) => lost(c, err));
    c.on("end", () => lost(c, new Error(`${name} connection closed`)));
    options.prepare?.(c);
    try {
      await c.connect();
      await options.onConnect?.(c, signal);
    } catch (err) {
      await c.end().catch(ignore);
      throw err;
    }
    if (signal.aborted) {
      await c.end().catch(ignore);
      return;
    }
    client = c;
    backoff.reset();
    scheduleCheck(c);
    const reconnected = everUp;
    everUp = true;
    options.onUp?.(c, { reconnected });
  }

  /** The connection `c` failed or closed. */
  function lost(c: pg.Client, err: unknown): void {
    if (client !== c) return;
    client = null;
    clearTimer();
    void c.end().catch(ignore);
    if (stopped) return;
    options.onLost?.(err);
    scheduleReconnect();
  }

  function scheduleReconnect(): void {
    if (stopped || timer) return;
    const signal = run.signal;
    timer = setTimeout(() => {
      timer = null;
      connect(signal).catch((err) => {
        // once per outage at warn; every retry after at debug (a restart takes many)
        const level = backoff.failures === 1 ? "warn" : "debug";
        logger[level]({ err, failures: backoff.failures }, `${name} reconnect failed; retrying`);
        scheduleReconnect();
      });
    }, backoff.next());
    timer.unref();
  }

  function scheduleCheck(c: pg.Client): void {
    const check = options.check;
    if (!check) return;
    timer = setTimeout(async () => {
      timer = null;
      const answered = await Promise.race([
        c.query("select 1").then(
          () => true,
          () => false,
        ),
        pause(check.timeoutMs).then(() => false),
      ]);
      if (client !== c) return;
      if (answered) scheduleCheck(c);
      else lost(c, new Error(`no ${name} check answer within ${check.timeoutMs} ms`));
    }, check.intervalMs);
    timer.unref();
  }

  function clearTimer(): void {
    if (timer) clearTimeout(timer);
    timer = null;
  }

  return {
    get client() {
      return client;
    },
    async start() {
      if (!stopped) return;
      stopped = false;
      everUp = false;
      run = new AbortController();
      backoff.reset();
      try {
        await connect(run.signal);
      } catch (err) {
        stopped = true; // not started: a later start() tries again
        throw err;
      }
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      run.abort();
      clearTimer();
      const c = client;
      client = null;
      await c?.end().catch(ignore);
    },
  };
}
