/**
 * The claim's floor (migration 0038, docs/history.md): every queued delivery outside the
 * legacy partition (message_ms 0) has a message_ms of at least delivery_floor.ms. Kept
 * true here; the claim reads it as the lower end of its periods, and checks in its own
 * statement that no queued row lies below (src/queue/claim-deliveries.ts, BOUNDS_SQL;
 * docs/history.md, "The claim's periods").
 *
 * Raised only by the maintenance task (src/ops/delivery-floor.ts), which locks the row
 * first and then reads the queue with a new snapshot; lowered by every statement that makes
 * a delivery queued again, in that statement (so in its transaction): the lowering waits
 * for a raise under way, then applies to the raised value, and a raise that starts after it
 * waits for its commit and then sees its row. Either way no queued row is left below.
 */

/**
 * A statement part that lowers the floor to `msSql` (the least message_ms of the rows the
 * statement makes queued; null changes nothing), for a CTE of the writing statement. It
 * touches the row only when it lowers it.
 */
export function lowerFloorSql(msSql: string): string {
  return `update delivery_floor f set ms = x.ms
          from (select (${msSql})::bigint as ms) x
          where x.ms >= 1 and f.ms > x.ms
          returning 1`;
}
