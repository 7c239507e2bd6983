/**
 * One statement run with settings of its own, in one round trip: the claim's JIT off, the
 * claim's and the result write's generic plans, the claim's plan of index probes
 * (docs/delivery.md, "The claim and JIT" and "The claim's plan"; docs/performance.md,
 * scenario 3's history).
 *
 * PostgreSQL plans a statement at its Bind, and reads `jit` and `plan_cache_mode` then. So
 * the query is sent as one pipeline of extended-protocol messages closed by a single Sync:
 * first `set_config(name, value, true)` for each setting (local to the transaction), then
 * the statement's own Parse, Bind, Describe and Execute. Everything before a Sync runs in
 * one implicit transaction, which the Sync commits (or rolls back on an error), and the
 * settings end with it: nothing is left on the session, so it holds behind a transaction
 * pooler too (PgBouncer keeps a server connection for a client until the transaction ends,
 * at the Sync). The wire costs what one query costs; the set_config row is dropped from
 * the result.
 *
 * The query is a pg Query whose `prepare` sends the extra messages before its own (pg
 * prepares a query with parameters through the extended protocol). A named statement's Parse
 * goes first, before the unnamed set_config statement, so pg's record of which statements a
 * connection has parsed (filled in on each ParseComplete) stays true.
 */
import pg from "pg";
import { withStatementNaming } from "./pool.ts";

/** The settings a statement may take for itself (each with the one value used). */
export interface LocalSettings {
  /** no JIT compilation of the statement (the claim: docs/delivery.md) */
  jit?: "off";
  /**
   * planned once per connection: without it PostgreSQL plans a named statement's first five
   * runs on each connection one by one (custom plans) before settling on the generic plan
   */
  plan_cache_mode?: "force_generic_plan";
  /** no scan of a whole table where an index can be read instead */
  enable_seqscan?: "off";
  /** no bitmap scans: they read every matching index entry before the first row */
  enable_bitmapscan?: "off";
  /** no hash joins: their inner side is read whole */
  enable_hashjoin?: "off";
  /** no merge joins: each side is read in order until the other ends */
  enable_mergejoin?: "off";
}

export const WITHOUT_JIT: LocalSettings = { jit: "off" };
export const GENERIC_PLAN: LocalSettings = { plan_cache_mode: "force_generic_plan" };
/**
 * A plan of nested loops over index scans, whatever the statistics say: for a statement that
 * reads a few rows through indexes (the claim), where a hash or merge join, a bitmap or a
 * sequential scan reads a whole table or index, and a plan built while a table looked empty
 * (a fresh database, a new period's partition) would pick one (docs/delivery.md, "The
 * claim's plan"). Each is only made costlier: where no index serves, PostgreSQL still scans.
 */
export const INDEX_PROBES: LocalSettings = {
  enable_seqscan: "off",
  enable_bitmapscan: "off",
  enable_hashjoin: "off",
  enable_mergejoin: "off",
};

/** `select set_config(...)` for each setting, until the end of the transaction. */
function settingSql(settings: LocalSettings): string {
  const calls = Object.entries(settings).map(([name, value]) => {
    if (!/^[a-z_]+$/.test(name) || !/^[a-z_]+$/.test(String(value)))
      throw new Error(`queryWithLocalSettings: unexpected setting ${name}=${value}`);
    return `set_config('${name}', '${value}', true)`;
  });
  if (calls.length === 0) throw new Error("queryWithLocalSettings: no setting");
  return `select ${calls.join(", ")}`;
}

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
  _results: pg.QueryResult | pg.QueryResult[];
  hasBeenParsed(connection: Wire): boolean;
}

const QueryBase = pg.Query as unknown as new (
  config: pg.QueryConfig,
) => pg.Submittable & {
  prepare(connection: Wire): void;
  handleReadyForQuery(connection: Wire): void;
};

class QueryWithSettings extends QueryBase {
  constructor(
    config: pg.QueryConfig,
    private readonly settingText: string,
  ) {
    super(config);
  }

  prepare(connection: Wire): void {
    const self = this as unknown as QueryInternals;
    if (self.name && !self.hasBeenParsed(connection)) {
      connection.parse({ text: self.text, name: self.name, types: self.types });
      connection.submittedNamedStatements[self.name] = self.text;
    }
    connection.parse({ text: this.settingText, name: "" });
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
 * Runs `query` with `settings`, as described above, on one of the pool's connections. It
 * must have parameters: pg sends a query without any as one simple-protocol message, where
 * nothing can be added. Its name is dropped where the pool's statement names are off.
 */
export async function queryWithLocalSettings<R extends pg.QueryResultRow = pg.QueryResultRow>(
  pool: pg.Pool,
  settings: LocalSettings,
  query: pg.QueryConfig,
): Promise<pg.QueryResult<R>> {
  if (!query.values || query.values.length === 0) {
    throw new Error(
      "queryWithLocalSettings: the query must have parameters (the extended protocol)",
    );
  }
  const submittable = new QueryWithSettings(withStatementNaming(pool, query), settingSql(settings));
  // (a pool runs a Submittable on one of its clients and answers with the result)
  return (pool.query as (q: pg.Submittable) => Promise<pg.QueryResult<R>>).call(pool, submittable);
}
