/**
 * The claim's floor (migration 0038, docs/history.md): every queued delivery has message_ms
 * 0 (the legacy partition) or at least delivery_floor.ms, so the claim's reads of the
 * queue say so and PostgreSQL skips the older periods (their backlog is none).
 *
 * Raised only by the maintenance task (src/ops/delivery-floor.ts), which locks the row
 * first and then reads the queue with a new snapshot; lowered by every statement that makes
 * a delivery queued again, in that statement (so in its transaction): the lowering waits
 * for a raise under way, then applies to the raised value, and a raise that starts after it
 * waits for its commit and then sees its row. Either way no queued row is left below.
 */

/** `alias`'s row is at or above the floor (or legacy): a condition on a read of the queue. */
export function aboveFloorSql(alias: string): string {
  return `(${alias}.message_ms < 1 or ${alias}.message_ms >= (select f.ms from delivery_floor f))`;
}

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
