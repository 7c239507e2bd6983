/**
 * The parts of a worker process that want a database session of their own (docs/database.md):
 * the LISTEN connection, the liveness lock and the maintenance lock. With a session URL
 * (DATABASE_URL reached directly, or HOOKRELAY_DATABASE_DIRECT_URL beside a transaction
 * pooler) they use it as always; without one the worker polls, proves it is alive by a
 * heartbeat row and runs maintenance under a lease row, all through the pooled pool.
 */
import type { Config } from "./config.ts";
import type { DatabaseMode } from "./db/database-mode.ts";
import { makePool, type Pool } from "./db/pool.ts";
import type { Logger } from "./logger.ts";
import { type MaintenanceLock, sessionLock } from "./ops/maintenance.ts";
import { leaseLock } from "./ops/maintenance-lease.ts";
import { makeHeartbeatLiveness } from "./worker/heartbeat-liveness.ts";
import { type Liveness, makeLiveness } from "./worker/liveness.ts";
import { makeWorkListener, type WorkListener } from "./worker/work-listener.ts";

export interface SessionBound {
  liveness: Liveness;
  /** null: no session for LISTEN, the worker polls (mode.pollIntervalMs) */
  listener: WorkListener | null;
  maintenanceLock: MaintenanceLock;
  /** ends the small pool of the maintenance lock or of the heartbeat, if one was made */
  end(): Promise<void>;
}

export function makeSessionBound(options: {
  mode: DatabaseMode;
  pool: Pool;
  /** DATABASE_URL, for the heartbeat's own one-connection pool */
  connectionString: string;
  config: Pick<Config, "worker">;
  logger: Logger;
  onWork: () => void;
}): SessionBound {
  const { mode, pool, logger } = options;
  const url = mode.sessionUrl;
  if (url === null) {
    // A pool of its own: a beat never queues behind the worker's statements for a
    // connection of the main pool, however busy (each beat is still one short transaction).
    const beatPool = makePool({
      connectionString: options.connectionString,
      max: 1,
      preparedStatements: false,
      applicationName: "hookrelay-heartbeat",
      logger,
    });
    return {
      liveness: makeHeartbeatLiveness({
        pool: beatPool,
        logger: logger.child({ component: "liveness" }),
        staleMs: options.config.worker.heartbeatStaleMs,
        judgeAfterMs: options.config.worker.livenessJudgeAfterMs,
        onHeld: options.onWork,
      }),
      listener: null,
      maintenanceLock: leaseLock(pool, logger.child({ component: "maintenance" })),
      end: () => beatPool.end(),
    };
  }
  // The session lock needs a session: the main pool's when it is direct, else a small one.
  const lockPool =
    mode.pooler === "direct" ? null : makePool({ connectionString: url, max: 1, logger });
  return {
    liveness: makeLiveness({
      connectionString: url,
      logger: logger.child({ component: "liveness" }),
      onHeld: options.onWork,
      timings: { judgeAfterMs: options.config.worker.livenessJudgeAfterMs },
    }),
    listener: makeWorkListener({ connectionString: url, onWork: options.onWork, logger }),
    maintenanceLock: sessionLock(lockPool ?? pool),
    end: async () => {
      await lockPool?.end();
    },
  };
}
