/**
 * What a connection string reaches, found out at start (docs/database.md, "Connection
 * poolers"): PostgreSQL itself (or a pooler in session mode: one server session per client
 * connection, the same thing for hookrelay), a pooler in transaction mode (server
 * sessions shared between transactions), a pooler in statement mode (refused: hookrelay
 * needs transactions), or a read-only standby (refused).
 *
 * Two client connections each ask for their backend's pid a few times, in turn, each
 * question its own transaction. On a session of its own a connection always sees the
 * same pid, and two connections never see each other's. Behind a transaction pooler they
 * do: PgBouncer hands the server connection that became free last to the next
 * transaction, so the second connection's first question already gets the first one's
 * backend; with round-robin the pids change instead.
 */
import pg from "pg";
import { ConfigError, DatabaseError } from "../errors.ts";
import { clientKeepAlive } from "./keepalive.ts";
import { pgConnection } from "./tls.ts";

/** direct: every client connection has a server session of its own. */
export type PoolerMode = "direct" | "transaction";
/** HOOKRELAY_DB_POOLER: auto = detect; none or transaction = trust the setting. */
export type PoolerSetting = "auto" | "none" | "transaction";

const ROUNDS = 4;

/** A pooler in statement mode refuses `begin` with this (PgBouncer: 08P01). */
const STATEMENT_MODE = /statement pooling|transaction blocks not allowed/i;

export interface Detected {
  mode: PoolerMode;
  /** how the mode was found: detected, or taken from the setting */
  by: "detected" | "setting";
}

/**
 * Finds out what `connectionString` reaches. `setting` other than auto skips the pid
 * rounds; the statement-mode and standby checks always run. `what` names the setting in
 * the errors (DATABASE_URL, HOOKRELAY_DATABASE_DIRECT_URL).
 */
export async function detectPooler(
  connectionString: string,
  setting: PoolerSetting,
  what: string,
): Promise<Detected> {
  const db = pgConnection(connectionString); // TLS as the URL says (docs/database.md, "TLS")
  const open = async () => {
    const c = new (db.explaining(pg.Client))({
      connectionString: db.connectionString,
      ssl: db.ssl,
      application_name: "hookrelay-detect",
      connectionTimeoutMillis: 10_000,
      ...clientKeepAlive,
    });
    c.on("error", () => undefined); // a refused transaction ends the connection
    await c.connect();
    return c;
  };
  const a = await open();
  let b: pg.Client | null = null;
  try {
    let standby: boolean;
    try {
      await a.query("begin");
      standby = (await a.query("select pg_is_in_recovery() as standby")).rows[0].standby;
      await a.query("commit");
    } catch (err) {
      if (STATEMENT_MODE.test((err as Error).message)) {
        throw new ConfigError(
          `${what} reaches a connection pooler in statement mode, which refuses transactions: hookrelay needs session or transaction mode (PgBouncer pool_mode = transaction)`,
          { cause: err },
        );
      }
      throw err;
    }
    if (standby) {
      throw new DatabaseError(
        `${what} reaches a read-only standby (pg_is_in_recovery() is true): point it at the primary, or at a pooler or proxy that always reaches the primary`,
      );
    }
    if (setting !== "auto")
      return { mode: setting === "transaction" ? "transaction" : "direct", by: "setting" };
    b = await open();
    const pidsA = new Set<number>();
    const pidsB = new Set<number>();
    const pid = async (c: pg.Client) =>
      (await c.query("select pg_backend_pid() as pid")).rows[0].pid as number;
    for (let i = 0; i < ROUNDS; i++) {
      pidsA.add(await pid(a));
      pidsB.add(await pid(b));
    }
    const shared = [...pidsA].some((p) => pidsB.has(p));
    const pooled = shared || pidsA.size > 1 || pidsB.size > 1;
    return { mode: pooled ? "transaction" : "direct", by: "detected" };
  } finally {
    await a.end().catch(() => undefined);
    await b?.end().catch(() => undefined);
  }
}
