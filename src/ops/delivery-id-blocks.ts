/**
 * The maintenance task `delivery-id-blocks` (migration 0039, db/sql/delivery-id-blocks.ts,
 * docs/history.md): writes the range of message_ms of each block of 65,536 delivery ids
 * once no delivery of that block can still be written.
 *
 * Ids come from the sequence delivery_ids (cache 1: no session holds values taken ahead).
 * A run reads the sequence's value and then the clock (the mark); a transaction that took
 * an id up to that value began before the mark. A later run that sees no transaction open
 * since before the mark (pg_stat_activity's xact_start, every session of this database and
 * role; sessions of other roles, whose xact_start PostgreSQL hides from it, do not write
 * deliveries) knows every id up to the value is written or never will be, and summarizes
 * the whole blocks below it. Deliveries never change their id or
 * message_ms (a dropped period's backlog moves to the default partition with both), so a
 * written block stays true; rows deleted since only make it wider than needed.
 */
import type { Pool } from "../db/pool.ts";
import { BLOCK_BITS } from "../db/sql/delivery-id-blocks.ts";
import { listPartitions } from "./attempt-partitions.ts";

/** Blocks summarized per statement (1,048,576 ids: each reads their rows' message_ms). */
const BLOCKS_PER_STEP = 16;

export interface DeliveryIdBlockRun {
  /** blocks below this are summarized */
  doneBelow: number;
  /** blocks written (those with rows) by this run */
  written: number;
}

/**
 * One run: summarizes the whole blocks the last mark allows (at most `maxSteps`
 * statements: an installation with a long history is summarized over many runs), and
 * marks again once it has caught up with the mark.
 */
export async function summarizeDeliveryIdBlocks(
  pool: Pool,
  maxSteps = 8,
): Promise<DeliveryIdBlockRun> {
  const { rows: marks } = await pool.query<{
    done_below: string;
    mark_seq: string | null;
    settled: boolean;
  }>(
    `select m.done_below, m.mark_seq,
            m.mark_at is not null and not exists (
              select from pg_stat_activity a
              where a.pid <> pg_backend_pid() and a.backend_type = 'client backend'
                and a.datname = current_database()
                and a.xact_start <= m.mark_at) as settled
     from delivery_id_block_marks m`,
  );
  const mark = marks[0]!;
  let doneBelow = Number(mark.done_below);
  let written = 0;
  // the whole blocks below the marked value's (that one may take more ids)
  const upTo =
    mark.mark_seq === null ? 0 : Math.floor((Number(mark.mark_seq) + 1) / 2 ** BLOCK_BITS);
  if (mark.settled) {
    for (let step = 0; step < maxSteps && doneBelow < upTo; step++) {
      const next = Math.min(upTo, doneBelow + BLOCKS_PER_STEP);
      const { rows } = await pool.query<{ n: number }>(
        `with summary as (
           insert into delivery_id_blocks (block, min_ms, max_ms)
           select id >> ${BLOCK_BITS}, min(message_ms), max(message_ms) from deliveries
           where id >= $1::bigint << ${BLOCK_BITS} and id < $2::bigint << ${BLOCK_BITS}
           group by 1
           on conflict (block) do update
             set min_ms = least(delivery_id_blocks.min_ms, excluded.min_ms),
                 max_ms = greatest(delivery_id_blocks.max_ms, excluded.max_ms)
           returning 1),
         moved as (update delivery_id_block_marks set done_below = $2::bigint returning 1)
         select count(*)::int as n from summary`,
        [doneBelow, next],
      );
      written += rows[0]!.n;
      doneBelow = next;
    }
  }
  if (mark.mark_seq === null || (mark.settled && doneBelow >= upTo)) {
    // a new mark: the sequence's value first, then the clock
    const { rows: seq } = await pool.query<{ v: string }>(
      "select case when is_called then last_value else last_value - 1 end as v from delivery_ids",
    );
    await pool.query(
      "update delivery_id_block_marks set mark_seq = $1::bigint, mark_at = clock_timestamp()",
      [seq[0]!.v],
    );
  }
  return { doneBelow, written };
}

/**
 * Deletes the blocks whose deliveries are all gone: retention's last step, after its drops.
 * A block's rows are all gone when its greatest message_ms is older than the oldest period's
 * start (so none is in a period) and the default partition holds none of its ids (rows
 * waiting for their period, and the backlog a dropped period left there: one probe of its
 * id index per block). Blocks of legacy rows (message_ms 0) are kept. Deleting a block whose
 * rows were still there would cost only speed: a lookup of an id without its block reads
 * every period, and finds the row. Returns the blocks deleted.
 */
export async function deleteGoneDeliveryIdBlocks(pool: Pool): Promise<number> {
  const periods = (await listPartitions(pool, "deliveries")).filter((p) => p.lo >= 1);
  if (periods.length === 0) return 0;
  const { rowCount } = await pool.query(
    `delete from delivery_id_blocks b
     where b.min_ms >= 1 and b.max_ms < $1::bigint
       and not exists (select from deliveries_default d
                       where d.id >= b.block << ${BLOCK_BITS} and d.id < (b.block + 1) << ${BLOCK_BITS})`,
    [periods[0]!.lo],
  );
  return rowCount ?? 0;
}
