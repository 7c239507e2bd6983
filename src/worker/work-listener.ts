/**
 * A dedicated connection that LISTENs for new work and calls `onWork`. It reconnects after
 * a failure (with backoff); workers keep polling meanwhile, so a lost notification only
 * costs one poll interval.
 */
import pg from "pg";
import { clientKeepAlive } from "../db/keepalive.ts";
import type { Logger } from "../logger.ts";
import { WORK_CHANNEL } from "../queue/work-channel.ts";

export interface WorkListener {
  start(): Promise<void>;
  stop(): Promise<void>;
}

export function makeWorkListener(options: {
  connectionString: string;
  onWork: () => void;
  logger: Logger;
}): WorkListener {
  let client: pg.Client | null = null;
  let stopped = true;
  let retryTimer: NodeJS.Timeout | null = null;
  let backoffMs = 100;

  async function connect(): Promise<void> {
    const c = new pg.Client({
      connectionString: options.connectionString,
      application_name: "hookrelay-listener",
      ...clientKeepAlive,
    });
    c.on("notification", () => options.onWork());
    c.on("error", (err) => {
      options.logger.warn({ err }, "work listener connection lost; reconnecting");
      void c.end().catch(() => undefined);
      if (client === c) client = null;
      scheduleReconnect();
    });
    await c.connect();
    await c.query(`listen ${WORK_CHANNEL}`);
    if (stopped) {
      await c.end();
      return;
    }
    client = c;
    backoffMs = 100;
    // Work may have arrived while we were not listening.
    options.onWork();
  }

  function scheduleReconnect() {
    if (stopped || retryTimer) return;
    retryTimer = setTimeout(() => {
      retryTimer = null;
      connect().catch((err) => {
        options.logger.warn({ err }, "work listener reconnect failed");
        backoffMs = Math.min(backoffMs * 2, 10_000);
        scheduleReconnect();
      });
    }, backoffMs);
    retryTimer.unref();
  }

  return {
    async start() {
      if (!stopped) return;
      stopped = false;
      await connect();
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
