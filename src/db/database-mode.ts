/**
 * How this process reaches PostgreSQL, settled once at start (docs/database.md,
 * "Connection poolers"), and the one log line that says so and what it costs.
 *
 * - direct: DATABASE_URL has a session per connection (PostgreSQL itself, the embedded
 *   one, or a pooler in session mode). Everything as always: named prepared statements,
 *   LISTEN, advisory-lock liveness, the maintenance session lock.
 * - transaction: DATABASE_URL is a transaction pooler. Statements go unnamed; the
 *   session-bound parts use HOOKRELAY_DATABASE_DIRECT_URL when it is given, and work
 *   without a session otherwise (polling, heartbeat rows, a lease row).
 */
import type { Config } from "../config.ts";
import { ConfigError } from "../errors.ts";
import { detectPooler, type PoolerMode } from "./pooler-detect.ts";

export interface DatabaseMode {
  pooler: PoolerMode;
  /** the URL for LISTEN, liveness and the maintenance lock; null: none has a session */
  sessionUrl: string | null;
  /** the worker's idle poll in this mode, ms */
  pollIntervalMs: number;
  /** the start-up log line */
  line: string;
}

export async function resolveDatabaseMode(
  config: Pick<Config, "dbPooler" | "databaseDirectUrl" | "worker">,
  connectionString: string,
  embedded: boolean,
): Promise<DatabaseMode> {
  const poll = config.worker.pollIntervalMs;
  const found = embedded
    ? { mode: "direct" as const, by: "embedded" }
    : await detectPooler(connectionString, config.dbPooler, "DATABASE_URL");
  const how = found.by === "setting" ? `HOOKRELAY_DB_POOLER=${config.dbPooler}` : found.by;
  if (found.mode === "direct") {
    return {
      pooler: "direct",
      sessionUrl: connectionString,
      pollIntervalMs: poll,
      line: `database reached direct (${how}): LISTEN wake-ups, crashed workers handed back within the ${poll} ms poll interval by advisory lock`,
    };
  }
  const direct = config.databaseDirectUrl;
  if (direct) {
    const check = await detectPooler(direct, "auto", "HOOKRELAY_DATABASE_DIRECT_URL");
    if (check.mode !== "direct") {
      throw new ConfigError(
        "HOOKRELAY_DATABASE_DIRECT_URL reaches a transaction pooler too: it must reach PostgreSQL itself (or a pooler in session mode)",
      );
    }
    return {
      pooler: "transaction",
      sessionUrl: direct,
      pollIntervalMs: poll,
      line: `database reached through a transaction pooler (${how}): prepared statements off; LISTEN wake-ups, worker liveness and the maintenance lock through HOOKRELAY_DATABASE_DIRECT_URL (crashed workers handed back within the ${poll} ms poll interval)`,
    };
  }
  const pooledPoll = Math.min(poll, config.worker.pooledPollIntervalMs);
  const stale = config.worker.heartbeatStaleMs;
  return {
    pooler: "transaction",
    sessionUrl: null,
    pollIntervalMs: pooledPoll,
    line: `database reached through a transaction pooler (${how}); no direct URL: prepared statements off, wake-ups by polling every ${pooledPoll} ms, crashed workers handed back after ~${Math.round((stale + pooledPoll) / 1000)} s by heartbeat, maintenance lock by lease; set HOOKRELAY_DATABASE_DIRECT_URL for LISTEN and ~1 s hand-back`,
  };
}
