/**
 * The bounds that keep the queue's and the dead letters' counts off the history's periods
 * (docs/history.md, "The dashboard on a long history").
 *
 * Queued rows: every queued delivery outside the legacy partition has a message_ms at least
 * the claim's floor (delivery_floor, db/sql/delivery-floor.ts), save one written since the
 * last maintenance run by an API process whose clock is more than an hour behind the
 * database's (the next run lowers the floor to it). A count of queued rows reads the periods
 * from the floor's day up, the legacy and the default partitions: the floor is read first
 * and given as a value, so PostgreSQL plans only those partitions.
 *
 * Dead letters have no such bound (a dead letter stays in its message's period, whatever
 * its age): a count of them reads every period's dead-letter index, as one short named
 * statement run with its generic plan (generic-plan.ts), planned once per connection
 * instead of every partition at each call.
 */
import { INTERVAL_MS } from "../../domain/partition-interval.ts";
import { namedSql } from "../named-sql.ts";
import type { Queryable } from "../pool.ts";
import { queryGeneric } from "./generic-plan.ts";

const DAY_MS = INTERVAL_MS.day;

/**
 * The lowest message_ms a queued row of a period can have (the floor's UTC day: a day
 * starts a period of either interval), at least 1 (message_ms 0 is the legacy partition's).
 */
export async function queuedFromMs(db: Queryable): Promise<number> {
  const floor = (await deliveryFloorMs(db)) ?? 0;
  return Math.max(1, floor - (floor % DAY_MS));
}

/**
 * The claim's floor as stored (epoch ms); null when the statement returned no row (a caller
 * that records statements instead of running them: the floor's migration writes the row).
 */
export async function deliveryFloorMs(db: Queryable): Promise<number | null> {
  const { rows } = await db.query<{ ms: number | string }>("select ms from delivery_floor limit 1");
  return rows[0] === undefined ? null : Number(rows[0].ms);
}

/** `alias.message_ms` where a queued row can be, given queuedFromMs's value as `param`. */
export function queuedBoundSql(alias: string, param: string): string {
  return `(${alias}.message_ms < 1 or ${alias}.message_ms >= ${param}::bigint)`;
}

const COUNTS_SQL = namedSql<{ endpointIds: string[] }>(
  `select endpoint_id, count(*)::int as n from deliveries
   where dead_lettered and endpoint_id = any ($endpointIds::text[]) group by endpoint_id`,
  "hookrelay_dead_letter_counts",
);

/** Dead letters of each of `endpointIds` (those with none are absent). */
export async function deadLetterCounts(
  db: Queryable,
  endpointIds: string[],
): Promise<Map<string, number>> {
  if (endpointIds.length === 0) return new Map();
  const { rows } = await queryGeneric<{ endpoint_id: string; n: number }>(
    db,
    COUNTS_SQL.query({ endpointIds }),
  );
  return new Map(rows.map((r) => [r.endpoint_id, r.n]));
}

const TOTAL_SQL = namedSql<Record<string, never>>(
  "select count(*)::int as n from deliveries where dead_lettered",
  "hookrelay_dead_letter_total",
);
const APP_TOTAL_SQL = namedSql<{ appId: string }>(
  "select count(*)::int as n from deliveries where dead_lettered and app_id = $appId::text",
  "hookrelay_dead_letter_total_app",
);

/** Dead letters in all, or of one app's endpoints. */
export async function deadLetterTotal(db: Queryable, appId: string | null): Promise<number> {
  const { rows } = await queryGeneric<{ n: number }>(
    db,
    appId === null ? TOTAL_SQL.query({}) : APP_TOTAL_SQL.query({ appId }),
  );
  return rows[0]!.n;
}
