/**
 * The claim's floor (migration 0038, docs/history.md): every queued delivery outside the
 * legacy partition (message_ms 0) has a message_ms of at least delivery_floor.ms. Kept
 * true here; the claim reads it as the lower end of its periods, and checks in its own
 * statement that no queued row lies below (src/queue/claim-deliveries.ts, BOUNDS_SQL;
 * docs/history.md, "The claim's periods").
 *
 * Raised only by the maintenance task (src/ops/delivery-floor.ts), which locks the row
 * first (FOR UPDATE) and then reads the queue with a new snapshot; lowered by every statement
 * that makes a delivery queued again, in that statement (so in its transaction). That
 * statement takes the row FOR KEY SHARE whatever it changes, and holds it until it commits:
 * a raise under way makes it wait, then it applies to the raised value; a raise that starts
 * after it waits for its commit and then sees its rows. Before, a statement whose rows lay
 * above the floor left the row alone, and a raise running before its commit did not see
 * them and could lift the floor above them (test/delivery-floor.test.ts plays it). Lowering
 * statements never wait for each other: FOR KEY SHARE and an update of `ms` (no key) do not
 * conflict.
 */

/**
 * A statement part that lowers the floor to `msSql` (the least message_ms of the rows the
 * statement makes queued; null changes nothing), for a CTE of the writing statement. It
 * locks the row FOR KEY SHARE when `msSql` is a period's row (1 or more) and writes it only
 * when it lowers it.
 */
export function lowerFloorSql(msSql: string): string {
  return `update delivery_floor f set ms = least(f.ms, x.ms)
          from (select (${msSql})::bigint as ms) x
          where x.ms >= 1
            and (select held.ms from delivery_floor held for key share) > x.ms
          returning 1`;
}
