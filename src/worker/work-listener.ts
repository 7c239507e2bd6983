/**
 * A dedicated connection that LISTENs for new work and calls `onWork`. When the connection
 * is lost (a PostgreSQL restart or failover) it reconnects with backoff and jitter
 * (lib/backoff.ts) until it succeeds or stop() is called; workers keep polling meanwhile,
 * so a lost notification only costs one poll interval, and every reconnect calls `onWork`
 * once for what arrived while nobody listened (docs/reliability.md).
 */
import pg from "pg";
import { clientKeepAlive } from "../db/keepalive.ts";
import { pgConnection } from "../db/tls.ts";
import { WORK_CHANNEL } from "../db/work-channel.ts";
import { makeBackoff } from "../lib/backoff.ts";
import type { Logger } from "../logger.ts";

export interface WorkListener {
  start(): Promise<void>;
  stop(): Promise<void>;
}

export function makeWorkListener(options: {
  connectionString: string;
  onWork: () => void;
  logger: Logger;
  /** reconnect waits: backoff from baseMs (default 100) up to capMs (default 5_000) */
  reconnect?: { baseMs?: number; capMs?: number };
}): WorkListener {
  let client: pg.Client | null = null;
  let stopped = true;
  let retryTimer: NodeJS.Timeout | null = null;
  const backoff = makeBackoff(options.reconnect);
  // TLS resolved once, as the URL says (docs/database.md, "TLS")
  const db = pgConnection(options.connectionString);
  const Client = db.explaining(pg.Client);

  async function connect(): Promise<void> {
    const c = new Client({
      connectionString: db.connectionString,
      ssl: db.ssl,
      application_name: "hookrelay-listener",
      connectionTimeoutMillis: 10_000,
      ...clientKeepAlive,
    });
    let lost = false;
    const onLost = (err?: Error) => {
      // 'error' and 'end' both come for one loss; the first one counts
      if (lost) return;
      lost = true;
      if (client === c) client = null;
      if (stopped) return;
      options.logger.warn({ err }, "work listener connection lost; reconnecting");
      void c.end().catch(() => undefined);
      scheduleReconnect();
    };
    c.on("notification", () => options.onWork());
    c.on("error", onLost);
    c.on("end", () => onLost());
    try {
      await c.connect();
      await c.query(`listen ${WORK_CHANNEL}`);
    } catch (err) {
      lost = true; // the caller retries; no second reconnect from the events above
      await c.end().catch(() => undefined);
      throw err;
    }
    if (stopped) {
      lost = true;
      await c.end();
      return;
    }
    client = c;
    if (backoff.failures > 0) options.logger.info("work listener reconnected");
    backoff.reset();
    // Work may have arrived while we were not listening.
    options.onWork();
  }

  function scheduleReconnect() {
    if (stopped || retryTimer) return;
    retryTimer = setTimeout(() => {
      retryTimer = null;
      connect().catch((err) => {
        options.logger.warn(
          { err, failures: backoff.failures },
          "work listener reconnect failed; retrying",
        );
        scheduleReconnect();
      });
    }, backoff.next());
    retryTimer.unref();
  }

  return {
    async start() {
      if (!stopped) return;
      stopped = false;
      try {
        await connect();
      } catch (err) {
        stopped = true; // not started: a later start() tries again
        throw err;
      }
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      if (retryTimer) clearTimeout(retryTimer);
      retryTimer = null;
      const c = client;
      client = null;
      await c?.end().catch(() => undefined);
    },
  };
}
