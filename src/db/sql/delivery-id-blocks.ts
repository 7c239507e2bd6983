/**
 * A delivery's partitions from its id alone (migration 0039, docs/history.md, "Lookups of a
 * delivery by id"): the range of message_ms its id's block holds, summarized by the
 * maintenance task (src/ops/delivery-id-blocks.ts). The bound is read by two scalar
 * subqueries, values PostgreSQL knows when the statement starts, so it prunes every other
 * period then, in a custom plan and a generic one. An id whose block is not summarized
 * yet gets no bound (every partition is read, as before).
 */

/** Ids per block: id >> BLOCK_BITS is the block. */
export const BLOCK_BITS = 16;

/** `alias.message_ms` within the range of delivery `idSql`'s block (true without one). */
export function deliveryIdBoundSql(alias: string, idSql: string): string {
  const column = alias === "" ? "message_ms" : `${alias}.message_ms`;
  const block = `(${idSql})::bigint >> ${BLOCK_BITS}`;
  return `${column} between coalesce((select b.min_ms from delivery_id_blocks b where b.block = ${block}), -9223372036854775808)
                        and coalesce((select b.max_ms from delivery_id_blocks b where b.block = ${block}), 9223372036854775807)`;
}
