/**
 * Statements with no bound on the history's periods (a dead letter stays in its message's
 * period, whatever its age: db/queries/queue-bounds.ts) read one index of every period. For
 * them planning costs more than reading: each call planned every partition (25-55 ms at 85
 * partitions here) to read them in 1-5 ms. Such a statement is a named one run with its
 * generic plan (local-settings.ts: in the same round trip, nothing left on the session),
 * planned once per connection: left to choose, PostgreSQL kept planning anew (a custom
 * plan for a given endpoint looks cheaper than the generic one).
 */
import pg from "pg";
import { GENERIC_PLAN, queryWithLocalSettings } from "../local-settings.ts";
import type { Queryable } from "../pool.ts";

/**
 * Runs `config` with its generic plan on a pool; a client's statement (in a transaction of
 * the caller's), or one without parameters (auto mode takes its generic plan), as it is.
 */
export function queryGeneric<R extends pg.QueryResultRow>(
  db: Queryable,
  config: { name?: string; text: string; values: unknown[] },
): Promise<pg.QueryResult<R>> {
  return db instanceof pg.Pool && config.values.length > 0
    ? queryWithLocalSettings<R>(db, GENERIC_PLAN, config)
    : db.query<R>(config);
}
