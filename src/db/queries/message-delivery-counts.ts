/**
 * How a page of messages stands: for each message, how many of its deliveries are in each
 * state (the status column of the message lists and exports, docs/browse.md).
 */
import type { Queryable } from "../pool.ts";
import { messageMsValues } from "../sql/message-ms.ts";

/** Message id -> delivery state -> how many of its deliveries are in it. */
export type DeliveryCounts = Map<string, Record<string, number>>;

/**
 * The counts for `messageIds` (one page: at most a few thousand ids), through deliveries'
 * unique (message_id, endpoint_id) index; a message that matched no endpoint is absent.
 */
export async function deliveryCountsOf(
  db: Queryable,
  messageIds: readonly string[],
): Promise<DeliveryCounts> {
  const counts: DeliveryCounts = new Map();
  if (messageIds.length === 0) return counts;
  const { rows } = await db.query<{ message_id: string; status: string; n: number }>(
    `select message_id, status, count(*)::integer as n from deliveries
     where message_id = any ($1::text[])
       -- their partitions (src/db/sql/message-ms.ts), not every day's
       and message_ms = any ($2::bigint[])
     group by message_id, status`,
    [messageIds, messageMsValues(messageIds)],
  );
  for (const r of rows) {
    const one = counts.get(r.message_id) ?? {};
    one[r.status] = r.n;
    counts.set(r.message_id, one);
  }
  return counts;
}
