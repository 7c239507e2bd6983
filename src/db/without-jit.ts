/**
 * One statement run with JIT off, in one round trip (docs/delivery.md, "The claim and JIT").
 *
 * PostgreSQL decides whether to JIT-compile a statement when it plans it, at its Bind, from
 * the session's `jit` setting then. So the query is sent as one pipeline of extended-protocol
 * messages closed by a single Sync: first `set_config('jit', 'off', true)` (local to the
 * transaction), then the statement's own Parse, Bind, Describe and Execute. Everything
 * before a Sync runs in one implicit transaction, which the Sync commits (or rolls back on an
 * error) and with it the setting ends: nothing is left on the session, so it holds behind a
 * transaction pooler too (PgBouncer keeps a server connection for a client until the
 * transaction ends, at the Sync). The wire costs what one query costs; the set_config row is
 * dropped from the result.
 *
 * The query is a pg Query whose `prepare` sends the extra messages before its own (pg
 * prepares a query with parameters through the extended protocol). A named statement's Parse
 * goes first, before the unnamed set_config statement, so pg's record of which statements a
 * connection has parsed (filled in on each ParseComplete) stays true.
 */
import pg from "pg";
import { withStatementNaming } from "./pool.ts";

/** Turns JIT off until the end of the transaction (the Sync that closes the pipeline). */
const JIT_OFF_SQL = "select set_config('jit', 'off', true)";

/** What pg's Query prepares with (lib/query.js; not in its type declarations). */
interface Wire {
  parse(m: { text: string; name?: string; types?: unknown[] }): void;
  bind(m: { portal?: string; statement?: string; values?: unknown[] }): void;
  describe(m: { type: "P" | "S"; name: string }): void;
  execute(m: { portal?: string; rows?: number }): void;
  submittedNamedStatements: Record<string, string>;
}

interface QueryInternals {
  name?: string;
  text: string;
  types?: unknown[];
  rows?: number;
  _results: pg.QueryResult | pg.QueryResult[];
  hasBeenParsed(connection: Wire): boolean;
}

const QueryBase = pg.Query as unknown as new (
  config: pg.QueryConfig,
) => pg.Submittable & {
  prepare(connection: Wire): void;
  handleReadyForQuery(connection: Wire): void;
};

class QueryWithoutJit extends QueryBase {
  prepare(connection: Wire): void {
    const self = this as unknown as QueryInternals;
    if (self.name && !self.hasBeenParsed(connection)) {
      connection.parse({ text: self.text, name: self.name, types: self.types });
      connection.submittedNamedStatements[self.name] = self.text;
    }
    connection.parse({ text: JIT_OFF_SQL, name: "" });
    connection.bind({ portal: "", statement: "", values: [] });
    connection.describe({ type: "P", name: "" });
    connection.execute({ portal: "" });
    // the statement's Bind (its Parse too if unnamed), Describe, Execute and the Sync
    super.prepare(connection);
  }

  handleReadyForQuery(connection: Wire): void {
    // two results, set_config's and the statement's: the caller gets the statement's alone
    const self = this as unknown as QueryInternals;
    if (Array.isArray(self._results)) self._results = self._results.at(-1) ?? self._results;
    super.handleReadyForQuery(connection);
  }
}

/**
 * Runs `query` with JIT off, as described above, on one of the pool's connections. It must
 * have parameters: pg sends a query without any as one simple-protocol message, where
 * nothing can be added. Its name is dropped where the pool's statement names are off.
 */
export async function queryWithoutJit<R extends pg.QueryResultRow = pg.QueryResultRow>(
  pool: pg.Pool,
  query: pg.QueryConfig,
): Promise<pg.QueryResult<R>> {
  if (!query.values || query.values.length === 0) {
    throw new Error("queryWithoutJit: the query must have parameters (the extended protocol)");
  }
  const submittable = new QueryWithoutJit(withStatementNaming(pool, query));
  // (a pool runs a Submittable on one of its clients and answers with the result)
  return (pool.query as (q: pg.Submittable) => Promise<pg.QueryResult<R>>).call(pool, submittable);
}
