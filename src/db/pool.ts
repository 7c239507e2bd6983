/** PostgreSQL connection pools and the transaction helper. */
import pg from "pg";
import type { Logger } from "../logger.ts";
import { clientKeepAlive } from "./keepalive.ts";
import { pgConnection } from "./tls.ts";

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
  /**
   * preparedStatements: false drops the `name` of named query configs (namedSql), so every
   * statement is an unnamed one: a transaction pooler shares server connections, where a
   * named statement prepared by one client is missing or already there for the next
   * (docs/database.md). Default true; settable later with usePreparedStatements().
   */
  preparedStatements?: boolean;
  /**
   * searchPath: the schema every connection resolves names in (sent at connect, so it
   * needs a direct connection, not a transaction pooler). Default: the role's own.
   */
  searchPath?: string;
}

/** Per pool: whether its connections keep statement names (docs/database.md). */
const naming = new WeakMap<pg.Pool, { named: boolean }>();

/** Turns a pool's named prepared statements on or off (off behind a transaction pooler). */
export function usePreparedStatements(pool: Pool, on: boolean): void {
  const state = naming.get(pool);
  if (!state) throw new Error("usePreparedStatements: not a pool made by makePool");
  state.named = on;
}

/** `config` as `pool`'s clients send it: without its statement name while the pool's are off. */
export function withStatementNaming<T>(pool: pg.Pool, config: T): T {
  return naming.get(pool)?.named === false ? withoutName(config) : config;
}

/** A query config without its statement name; anything else (text, a Query, a cursor) as is. */
export function withoutName<T>(config: T): T {
  if (config === null || typeof config !== "object" || !("name" in config)) return config;
  if (typeof (config as { submit?: unknown }).submit === "function") return config;
  const { name: _name, ...rest } = config as Record<string, unknown>;
  return rest as T;
}

/**
 * `db` with every statement sent unnamed: for a client hookrelay does not own (the
 * library's caller's), which may sit behind a transaction pooler and must never be left
 * with session state of ours.
 */
export function unnamedQueries(db: Queryable): Queryable {
  const query = (config: unknown, ...rest: unknown[]) =>
    (db.query as (...args: unknown[]) => unknown).call(db, withoutName(config), ...rest);
  return { query } as Queryable;
}

/** pg's Client, dropping statement names while `state.named` is false. */
function clientClass(state: { named: boolean }): new () => pg.ClientBase {
  return class extends pg.Client {
    constructor(config?: pg.ClientConfig) {
      super(config);
      const query = this.query.bind(this) as (...args: unknown[]) => unknown;
      (this as { query: unknown }).query = (config: unknown, ...rest: unknown[]) =>
        query(state.named ? config : withoutName(config), ...rest);
    }
  } as unknown as new () => pg.ClientBase;
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
  const state = { named: options.preparedStatements ?? true };
  // TLS as libpq means the URL's sslmode etc., failures told as sentences (docs/database.md)
  const db = pgConnection(options.connectionString);
  const pool = new pg.Pool({
    Client: db.explaining(clientClass(state)),
    connectionString: db.connectionString,
    ssl: db.ssl,
    max: options.max,
    application_name: options.applicationName ?? "hookrelay",
    idleTimeoutMillis: 30_000,
    connectionTimeoutMillis: options.connectTimeoutMs ?? 10_000,
    types: HOOKRELAY_TYPES,
    ...(options.searchPath !== undefined && { options: `-c search_path="${options.searchPath}"` }),
    // a database host that vanishes is noticed (docs/worker-liveness.md)
    ...clientKeepAlive,
  });
  naming.set(pool, state);
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

/** SQLSTATEs of a transaction PostgreSQL aborted to settle a race: run again, it can win. */
const LOST_RACE = new Set([
  "40P01", // deadlock_detected
  "40001", // serialization_failure
]);

/** Tries of withRetriedTransaction: the first, and two more after a lost race. */
const RACE_TRIES = 3;

/**
 * withTransaction, run again (up to RACE_TRIES in all) when PostgreSQL aborted it to break
 * a deadlock. For statements that take many rows' locks in an order the workers cannot
 * share: deleting an endpoint or an application cascades through its deliveries and
 * health row, which a worker's claim or result write locks in the other order (deliveries
 * first), so one of the two can lose at any time (docs/reliability.md, "Deletes against
 * the workers"). `fn` must touch nothing but `client`: a lost try is rolled back whole.
 */
export async function withRetriedTransaction<T>(
  pool: Pool,
  fn: (client: PoolClient) => Promise<T>,
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await withTransaction(pool, fn);
    } catch (err) {
      const code = (err as { code?: unknown } | null)?.code;
      if (attempt >= RACE_TRIES || typeof code !== "string" || !LOST_RACE.has(code)) throw err;
      // the winner holds its locks until it commits: a short, jittered pause before the next try
      await new Promise((resolve) => setTimeout(resolve, 20 + Math.random() * 80));
    }
  }
}
