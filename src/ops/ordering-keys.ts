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
 * The listing reads only the endpoint's problem rows: its keyed dead letters (when it
 * blocks) through the partial index deliveries_ordered_dead_idx and its keyed failed rows
 * through deliveries_ordered_queued_idx (migration 0020), each checked to be its key's head
 * with the claim's own probes of those indexes (queue/claim-deliveries.ts, ORDER_HEAD_SQL),
 * in delivery id order and a page at a time.
 */
import type { Queryable } from "../db/pool.ts";
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

const BLOCKED_SQL = `
with ep as (
  select e.id, e.ordered_dead_letter is distinct from 'skip' as blocks
  from endpoints e where e.id = $1::text
),
candidates as (
  select d.* from deliveries d
  where d.endpoint_id = $1::text and d.dead_lettered and d.ordering_key is not null
    and (select blocks from ep)
    and ($2::bigint is null or d.id > $2::bigint)
    and ($4::bigint is null or d.id = $4::bigint)
  union all
  select d.* from deliveries d
  where d.endpoint_id = $1::text and d.queued and d.ordering_key is not null
    and d.status = 'failed'
    and ($2::bigint is null or d.id > $2::bigint)
    and ($4::bigint is null or d.id = $4::bigint)
),
heads as (
  select c.*,
         (select count(*)::int from deliveries w
          where w.endpoint_id = c.endpoint_id and w.ordering_key = c.ordering_key
            and w.id > c.id and w.queued and w.ordering_key is not null) as waiting
  from candidates c
  where not exists (
          select 1 from deliveries o
          where o.endpoint_id = c.endpoint_id and o.ordering_key = c.ordering_key
            and o.id < c.id and o.queued and o.ordering_key is not null)
    and not ((select blocks from ep) and exists (
          select 1 from deliveries o
          where o.endpoint_id = c.endpoint_id and o.ordering_key = c.ordering_key
            and o.id < c.id and o.dead_lettered and o.ordering_key is not null))
)
select h.id, h.message_id, h.ordering_key, h.status, h.updated_at, h.next_attempt_at,
       h.attempt_count, h.last_error_kind, h.last_status_code, h.last_error, h.waiting
from heads h
where h.status = 'dead_letter' or h.waiting > 0
order by h.id
limit $3::int`;

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
  const { rows } = await db.query(BLOCKED_SQL, [endpointId, page.after, page.limit, null]);
  return rows.map(rowOf);
}

/** The blocked key whose head is `deliveryId` on this endpoint, or null if it is none. */
export async function blockedHead(
  db: Queryable,
  endpointId: string,
  deliveryId: number,
): Promise<BlockedKeyRow | null> {
  const { rows } = await db.query(BLOCKED_SQL, [endpointId, null, 1, deliveryId]);
  return rows[0] ? rowOf(rows[0]) : null;
}

/**
 * A failed head made due now (its retry schedule's wait cut short); the workers are woken.
 * False if it is no longer failed (a worker took it meanwhile).
 */
export async function retryFailedHead(db: Queryable, deliveryId: number): Promise<boolean> {
  const { rows } = await db.query(
    `with due as (
       update deliveries set next_attempt_at = now(), updated_at = now()
       where id = $1::bigint and status = 'failed'
       returning 1)
     select count(*)::int as n, case when count(*) > 0 then pg_notify('${WORK_CHANNEL}', '') end
     from due`,
    [deliveryId],
  );
  return rows[0].n === 1;
}

/**
 * Skips a blocked key's head: canceled (failed | dead_letter → canceled, skipSet), so the
 * next delivery of its key goes; the workers are woken. False if it moved meanwhile.
 */
export async function skipHead(db: Queryable, deliveryId: number): Promise<boolean> {
  const { rows } = await db.query(
    `with skipped as (
       update deliveries set ${skipSet}
       where id = $1::bigint and status in ${SKIPPABLE}
       returning 1)
     select count(*)::int as n, case when count(*) > 0 then pg_notify('${WORK_CHANNEL}', '') end
     from skipped`,
    [deliveryId],
  );
  return rows[0].n === 1;
}
