/**
 * Raises the claim's floor (migration 0038, db/sql/delivery-floor.ts, docs/history.md) to
 * the oldest queued delivery's period: the maintenance task `delivery-floor`. The floor
 * row is locked first and the queue read after, with a new snapshot (each statement of a
 * READ COMMITTED transaction takes one): a statement lowering the floor meanwhile either
 * committed before the read, which then sees its row, or waits for this transaction and
 * lowers the raised value.
 */
import type { Pool } from "../db/pool.ts";
import { withTransaction } from "../db/pool.ts";
import { listPartitions } from "./attempt-partitions.ts";

/**
 * Never above this long before now: a message whose id comes from an API process with a
 * clock that far behind the database's is still above the floor.
 */
const CLOCK_SKEW_MS = 3_600_000;

/** Raises (or lowers) the floor to what the queue holds; returns the new floor (epoch ms). */
export async function raiseDeliveryFloor(pool: Pool): Promise<number> {
  return withTransaction(pool, async (client) => {
    await client.query("select ms from delivery_floor for update");
    const { rows: now } = await client.query<{ ms: string }>(
      "select (extract(epoch from clock_timestamp()) * 1000)::bigint as ms",
    );
    let floor = Number(now[0]!.ms) - CLOCK_SKEW_MS;
    // the rows no period holds (waiting for theirs, or a dropped period's backlog): a
    // small table, read whole
    const { rows: held } = await client.query<{ ms: string | null }>(
      "select min(message_ms) as ms from deliveries_default where queued and message_ms >= 1",
    );
    if (held[0]?.ms != null) floor = Math.min(floor, Number(held[0].ms));
    // the oldest period with a queued row: one probe of its partial index each, oldest first
    for (const p of await listPartitions(client, "deliveries")) {
      if (p.lo < 1 || p.lo >= floor) continue;
      const { rows } = await client.query(`select 1 from ${p.name} where queued limit 1`);
      if (rows.length > 0) {
        floor = p.lo;
        break;
      }
    }
    await client.query("update delivery_floor set ms = $1::bigint", [floor]);
    return floor;
  });
}
