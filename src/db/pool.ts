/** PostgreSQL connection pools and the transaction helper. */
import pg from "pg";
import type { Logger } from "../logger.ts";

export type Pool = pg.Pool;
export type PoolClient = pg.PoolClient;
/** Anything that can run a query: the pool or a client inside a transaction. */
export type Queryable = Pick<pg.Pool, "query">;

/**
 * bigint (int8) columns arrive as JS numbers on hookrelay's own connections: our identities
 * and counts stay far below 2^53. Set per pool, never on pg's global parsers, so a host
 * application that shares the `pg` module keeps its own bigint handling.
 */
export const HOOKRELAY_TYPES: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: "text" | "binary") =>
    oid === pg.types.builtins.INT8
      ? Number
      : pg.types.getTypeParser(oid, format)) as pg.CustomTypesConfig["getTypeParser"],
};

export interface PoolOptions {
  connectionString: string;
  /** max: connections in the pool. */
  max: number;
  applicationName?: string;
  logger?: Logger;
  /**
   * connectTimeoutMs: how long a query waits for a connection (a new one, or a free one of
   * a full pool) before it fails, so that an unreachable server is an error the caller can
   * answer (the API's 503) instead of a hang. Default 10_000.
   */
  connectTimeoutMs?: number;
}

/**
 * A pool whose connection errors never crash the process (docs/reliability.md). pg emits
 * an 'error' event on a client whose connection dies (a PostgreSQL restart ends every
 * session with 57P01); the pool listens only on its idle clients, so one checked out by
 * pool.connect() (a transaction, the maintenance lock) would throw it at the process.
 * Every client gets a listener of its own; the statement in flight rejects with the same
 * error, and the pool drops a client that is no longer queryable when it is released.
 */
export function makePool(options: PoolOptions): Pool {
  const pool = new pg.Pool({
    connectionString: options.connectionString,
    max: options.max,
    application_name: options.applicationName ?? "hookrelay",
    idleTimeoutMillis: 30_000,
    connectionTimeoutMillis: options.connectTimeoutMs ?? 10_000,
    types: HOOKRELAY_TYPES,
  });
  const logLost = (err: Error, what: string) => {
    // 57P01: the server is shutting down (a restart, or the embedded cluster stopping at exit).
    const level = (err as { code?: string }).code === "57P01" ? "debug" : "warn";
    options.logger?.[level]({ err }, what);
  };
  pool.on("error", (err) => logLost(err, "idle database connection failed"));
  pool.on("connect", (client) => {
    // debug: an idle client's loss is logged above, a busy one's by whoever ran the statement
    client.on("error", (err) => options.logger?.debug({ err }, "database connection lost"));
  });
  return pool;
}

/** Runs `fn` in a transaction on one client; commits on success, rolls back on error. */
export async function withTransaction<T>(
  pool: Pool,
  fn: (client: PoolClient) => Promise<T>,
): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query("begin");
    const result = await fn(client);
    await client.query("commit");
    return result;
  } catch (err) {
    await client.query("rollback").catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
}
