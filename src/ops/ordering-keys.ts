/**
 * Blocked ordering keys of one endpoint (docs/delivery.md, "Ordering"): the keys whose
 * head, the lowest delivery id of the (endpoint, key) not final yet, holds the rest back,
 * and the two operator actions on that head: retry it, or skip it so the key moves on.
 *
 * A head holds its key when it is dead-lettered and the endpoint blocks on a dead head
 * (orderedDeadLetter block, the default), or when it is waiting in its retry schedule
 * (failed) with later deliveries of its key waiting behind it. A FIFO endpoint's one key
 * is the empty string.
 *
 * The listing finds each key's head by a skip scan of migration 0020's two partial indexes
 * (deliveries_ordered_queued_idx, and deliveries_ordered_dead_idx when the endpoint blocks):
 * one probe per key that has rows still queued or dead, never a read of the rows behind a
 * head, so its cost follows the endpoint's number of such keys, not its backlog. The heads
 * are then sorted by delivery id and paged; `waiting` is counted for the page's rows only.
 * Queued rows are read in the periods from the claim's floor up (db/queries/queue-bounds.ts);
 * dead heads in every period, and only when the endpoint has a dead letter with a key.
 */
import { namedSql } from "../db/named-sql.ts";
import type { Queryable } from "../db/pool.ts";
import { queryGeneric } from "../db/queries/generic-plan.ts";
import { queuedBoundSql, queuedFromMs } from "../db/queries/queue-bounds.ts";
import { byDeliveryId, deliveryIdRangeSql } from "../db/sql/delivery-id-blocks.ts";
import { SKIPPABLE, skipSet } from "../db/sql/delivery-states.ts";
import { WORK_CHANNEL } from "../db/work-channel.ts";

export interface BlockedKeyRow {
  deliveryId: number;
  messageId: string;
  /** the ordering key; "" is a FIFO endpoint's one key (the whole endpoint) */
  key: string;
  status: "dead_letter" | "failed";
  /** since when: the head's last change (its death, or its last attempt) */
  since: Date;
  /** a failed head's next attempt */
  nextAttemptAt: Date | null;
  attemptCount: number;
  lastErrorKind: string | null;
  lastStatusCode: number | null;
  lastError: string | null;
  /** deliveries of the same key queued behind the head */
  waiting: number;
}

/**
 * The first entry after `q`'s key in one of migration 0020's partial indexes; queued rows
 * only in the periods that can hold them ($5: db/queries/queue-bounds.ts).
 */
const nextKey = (pred: "queued" | "dead_lettered") => `
  select n.ordering_key, n.id, n.message_ms from ${pred}_heads q cross join lateral (
    select d.ordering_key, d.id, d.message_ms from deliveries d
    where d.endpoint_id = $1::text and d.${pred} and d.ordering_key is not null
      and d.ordering_key > q.ordering_key${pred === "queued" ? ` and ${queuedBoundSql("d", "$5")}` : ""}
    order by d.ordering_key, d.id limit 1) n`;

/**
 * The listing; `dead`: the endpoint has dead letters with an ordering key, whose heads are
 * read too (in every period: a dead letter stays in its message's). Without them every
 * read is of queued rows, so of the periods from the floor up.
 */
const blockedSql = (dead: boolean) => `
with recursive ep as (
  select e.ordered_dead_letter is distinct from 'skip' as blocks
  from endpoints e where e.id = $1::text
),
-- each key's lowest queued row: a skip scan, one probe of the partial index per key
queued_heads as (
  (select d.ordering_key, d.id, d.message_ms from deliveries d
   where d.endpoint_id = $1::text and d.queued and d.ordering_key is not null
     and ${queuedBoundSql("d", "$5")}
   order by d.ordering_key, d.id limit 1)
  union all ${nextKey("queued")}
),
${
  dead
    ? `-- each key's lowest dead row, when the endpoint blocks on a dead head
dead_lettered_heads as (
  (select d.ordering_key, d.id, d.message_ms from deliveries d
   where d.endpoint_id = $1::text and d.dead_lettered and d.ordering_key is not null
     and (select blocks from ep)
   order by d.ordering_key, d.id limit 1)
  union all ${nextKey("dead_lettered")}
),`
    : ""
}
heads as (
  select distinct on (ordering_key) ordering_key, id, message_ms
  from (select * from queued_heads${dead ? " union all select * from dead_lettered_heads" : ""}) a
  order by ordering_key, id
)
select d.id, d.message_id, d.ordering_key, d.status, d.updated_at, d.next_attempt_at,
       d.attempt_count, d.last_error_kind, d.last_status_code, d.last_error,
       (select count(*)::int from deliveries w
        where w.endpoint_id = d.endpoint_id and w.ordering_key = d.ordering_key
          and w.id > d.id and w.queued and w.ordering_key is not null
          and ${queuedBoundSql("w", "$5")}) as waiting
-- each head in its own partition; without dead heads, a queued row's periods only
from heads h join deliveries d on d.id = h.id and d.message_ms = h.message_ms
  ${dead ? "" : `and ${queuedBoundSql("d", "$5")}`}
where (d.status = 'dead_letter'
       or (d.status = 'failed' and exists (
             select 1 from deliveries w
             where w.endpoint_id = d.endpoint_id and w.ordering_key = d.ordering_key
               and w.id > d.id and w.queued and w.ordering_key is not null
               and ${queuedBoundSql("w", "$5")})))
  and ($2::bigint is null or d.id > $2::bigint)
  and ($4::bigint is null or d.id = $4::bigint)
order by d.id
limit $3::int`;

/** Whether the endpoint has a dead letter with an ordering key (every period's index). */
const ORDERED_DEAD_SQL = namedSql<{ endpointId: string }>(
  `select exists (select from deliveries d
                  where d.endpoint_id = $endpointId::text and d.dead_lettered
                    and d.ordering_key is not null) as dead`,
  "hookrelay_ordered_dead_exists",
);

async function blockedRows(
  db: Queryable,
  endpointId: string,
  after: number | null,
  limit: number,
  deliveryId: number | null,
): Promise<BlockedKeyRow[]> {
  const { rows: dead } = await queryGeneric<{ dead: boolean }>(
    db,
    ORDERED_DEAD_SQL.query({ endpointId }),
  );
  const { rows } = await db.query(blockedSql(dead[0]?.dead === true), [
    endpointId,
    after,
    limit,
    deliveryId,
    await queuedFromMs(db),
  ]);
  return rows.map(rowOf);
}

function rowOf(r: Record<string, unknown>): BlockedKeyRow {
  return {
    deliveryId: Number(r.id),
    messageId: r.message_id as string,
    key: r.ordering_key as string,
    status: r.status as BlockedKeyRow["status"],
    since: r.updated_at as Date,
    nextAttemptAt: r.status === "failed" ? (r.next_attempt_at as Date) : null,
    attemptCount: r.attempt_count as number,
    lastErrorKind: (r.last_error_kind as string | null) ?? null,
    lastStatusCode: (r.last_status_code as number | null) ?? null,
    lastError: (r.last_error as string | null) ?? null,
    waiting: r.waiting as number,
  };
}

/** The endpoint's blocked keys, by head delivery id, after `after` (a page: `limit` rows). */
export async function listBlockedKeys(
  db: Queryable,
  endpointId: string,
  page: { after: number | null; limit: number },
): Promise<BlockedKeyRow[]> {
  return blockedRows(db, endpointId, page.after, page.limit, null);
}

/** The blocked key whose head is `deliveryId` on this endpoint, or null if it is none. */
export async function blockedHead(
  db: Queryable,
  endpointId: string,
  deliveryId: number,
): Promise<BlockedKeyRow | null> {
  return (await blockedRows(db, endpointId, null, 1, deliveryId))[0] ?? null;
}

/**
 * Sets `set` on the delivery `deliveryId` (found through its id's block) where `condition`
 * holds, and wakes the workers if it did; true when it did.
 */
function updateHeadAndWake(
  db: Queryable,
  deliveryId: number,
  set: string,
  condition: string,
): Promise<boolean> {
  return byDeliveryId(
    db,
    deliveryId,
    async ([lo, hi]) => {
      const { rows } = await db.query(
        `with changed as (
           update deliveries set ${set}
           where id = $1::bigint and ${deliveryIdRangeSql("", "$2", "$3")} and ${condition}
           returning 1)
         select count(*)::int as n, case when count(*) > 0 then pg_notify('${WORK_CHANNEL}', '') end
         from changed`,
        [deliveryId, lo, hi],
      );
      return rows[0].n === 1;
    },
    (done) => done,
  );
}

/**
 * A failed head made due now (its retry schedule's wait cut short); the workers are woken.
 * False if it is no longer failed (a worker took it meanwhile).
 */
export function retryFailedHead(db: Queryable, deliveryId: number): Promise<boolean> {
  return updateHeadAndWake(
    db,
    deliveryId,
    "next_attempt_at = now(), updated_at = now()",
    "status = 'failed'",
  );
}

/**
 * Skips a blocked key's head: canceled (failed | dead_letter → canceled, skipSet), so the
 * next delivery of its key goes; the workers are woken. False if it moved meanwhile.
 */
export function skipHead(db: Queryable, deliveryId: number): Promise<boolean> {
  return updateHeadAndWake(db, deliveryId, skipSet, `status in ${SKIPPABLE}`);
}
