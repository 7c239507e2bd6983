/**
 * Claims due deliveries for one worker: a single short statement (its own transaction)
 * that marks the rows in_flight under a lease and returns everything needed to send them.
 * No transaction stays open while requests run.
 */
import type { Queryable } from "../db/pool.ts";

export interface ClaimOptions {
  workerId: string;
  /** One token per claim; results carrying another token are stale. */
  claimToken: string;
  limit: number;
  /** Per-endpoint in-flight limit for endpoints without their own. */
  defaultMaxInFlight: number;
  defaultTimeoutMs: number;
  /** lease = endpoint timeout + leaseMarginMs */
  leaseMarginMs: number;
}

export interface ClaimedDelivery {
  id: number;
  messageId: string;
  endpointId: string;
  appId: string;
  /** attempts made before this one */
  attemptCount: number;
  maxAttempts: number;
  trigger: string;
  eventType: string;
  payload: string;
  url: string;
  headers: Record<string, string>;
  timeoutMs: number;
  retryBaseMs: number | null;
  retryCapMs: number | null;
  /** secrets that sign this request, newest first */
  secrets: string[];
}

// Endpoints are visited in random order so that, under a backlog, every endpoint gets its
// share of each batch: a partner with 100k queued rows cannot push newer rows for the
// others to the back of the line. Per endpoint, the lateral subquery takes at most its
// free in-flight room, oldest due first, through deliveries_due_idx.
//
// "skip locked": rows another worker is claiming this instant are simply passed over, so
// claimers never wait on each other. in_flight rows whose lease has run out
// (next_attempt_at <= now()) are due again: that is how a crashed worker's rows come back.
//
// The in-flight count is read without locking, so two workers claiming at the same
// instant can together exceed an endpoint's limit by one batch's share.
const CLAIM_SQL = `
with busy as (
  select endpoint_id, count(*)::int as n
  from deliveries
  where status = 'in_flight' and next_attempt_at > now()
  group by endpoint_id
),
candidates as (
  select e.id, e.timeout_ms,
         coalesce(e.max_in_flight, $4::int) - coalesce(b.n, 0) as room
  from endpoints e
  left join busy b on b.endpoint_id = e.id
  where not e.disabled
  order by random()
),
picked as (
  select d.id, coalesce(c.timeout_ms, $5::int) as timeout_ms
  from candidates c
  cross join lateral (
    select d.id
    from deliveries d
    where d.endpoint_id = c.id
      and d.status in ('pending', 'failed', 'in_flight')
      and d.next_attempt_at <= now()
    order by d.next_attempt_at
    limit greatest(c.room, 0)
    for update skip locked
  ) d
  where c.room > 0
  limit $3::int
),
claimed as (
  update deliveries d
  set status = 'in_flight',
      claim_token = $2::uuid,
      claimed_by = $1::text,
      lease_expires_at = now() + (p.timeout_ms + $6::int) * interval '1 millisecond',
      next_attempt_at = now() + (p.timeout_ms + $6::int) * interval '1 millisecond',
      updated_at = now()
  from picked p
  where d.id = p.id
  returning d.id, d.message_id, d.endpoint_id, d.app_id, d.attempt_count, d.max_attempts, d.trigger
),
signing as (
  -- the secrets that sign right now: the current one and any still in a rotation's grace
  select s.endpoint_id, array_agg(s.secret order by s.id desc) as secrets
  from endpoint_secrets s
  where s.endpoint_id in (select endpoint_id from claimed)
    and (s.expires_at is null or s.expires_at > now())
  group by s.endpoint_id
)
-- "offset 0" keeps each lookup a per-row index probe: flattened into a join, the planner
-- may hash-join the whole messages table to find a few hundred rows.
select c.id, c.message_id, c.endpoint_id, c.app_id, c.attempt_count, c.max_attempts, c.trigger,
       m.event_type, m.payload,
       e.url, e.headers, coalesce(e.timeout_ms, $5::int) as timeout_ms,
       e.retry_base_ms, e.retry_cap_ms,
       coalesce(s.secrets, '{}'::text[]) as secrets
from claimed c
cross join lateral (
  select event_type, payload from messages where id = c.message_id offset 0
) m
cross join lateral (
  select url, headers, timeout_ms, retry_base_ms, retry_cap_ms from endpoints where id = c.endpoint_id offset 0
) e
left join signing s on s.endpoint_id = c.endpoint_id
`;

export async function claimDeliveries(db: Queryable, o: ClaimOptions): Promise<ClaimedDelivery[]> {
  const { rows } = await db.query({
    name: "hookrelay_claim_deliveries",
    text: CLAIM_SQL,
    values: [
      o.workerId,
      o.claimToken,
      o.limit,
      o.defaultMaxInFlight,
      o.defaultTimeoutMs,
      o.leaseMarginMs,
    ],
  });
  return rows.map((r) => ({
    id: r.id,
    messageId: r.message_id,
    endpointId: r.endpoint_id,
    appId: r.app_id,
    attemptCount: r.attempt_count,
    maxAttempts: r.max_attempts,
    trigger: r.trigger,
    eventType: r.event_type,
    payload: r.payload,
    url: r.url,
    headers: r.headers,
    timeoutMs: r.timeout_ms,
    retryBaseMs: r.retry_base_ms,
    retryCapMs: r.retry_cap_ms,
    secrets: r.secrets,
  }));
}
