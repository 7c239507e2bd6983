/**
 * A dedicated connection that LISTENs for new work and calls `onWork`. When the connection
 * is lost (a PostgreSQL restart or failover) it reconnects with backoff and jitter
 * (lib/backoff.ts) until it succeeds or stop() is called; workers keep polling meanwhile,
 * so a lost notification only costs one poll interval, and every reconnect calls `onWork`
 * once for what arrived while nobody listened (docs/reliability.md). The connection is
 * db/dedicated-connection.ts's.
 */
import { makeDedicatedConnection } from "../db/dedicated-connection.ts";
import { WORK_CHANNEL } from "../db/work-channel.ts";
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
  const { logger, onWork } = options;
  const connection = makeDedicatedConnection({
    connectionString: options.connectionString,
    applicationName: "hookrelay-listener",
    name: "work listener",
    logger,
    connectTimeoutMs: 10_000,
    backoff: options.reconnect,
    prepare: (c) => c.on("notification", () => onWork()),
    async onConnect(c) {
      await c.query(`listen ${WORK_CHANNEL}`);
    },
    onUp(_c, { reconnected }) {
      if (reconnected) logger.info("work listener reconnected");
      // Work may have arrived while we were not listening.
      onWork();
    },
    onLost(err) {
      logger.warn({ err }, "work listener connection lost; reconnecting");
    },
  });
  return { start: () => connection.start(), stop: () => connection.stop() };
}
