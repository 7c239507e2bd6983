/**
 * The health summary (docs/operations.md, Health summary): one object that says whether
 * delivery is keeping up. `oldestPending` is the most important number: how long the
 * longest-waiting delivery has been waiting.
 */
import type { Queryable } from "../db/pool.ts";
import { deadLetterTotal, queuedBoundSql, queuedFromMs } from "../db/queries/queue-bounds.ts";
import { waitingSinceSql } from "../db/sql/delivery-states.ts";

export interface HealthSummary {
  pending: number;
  awaitingRetry: number;
  inFlight: number;
  deadLetter: number;
  deliveredLastHour: number;
  failedLastHour: number;
  oldestPending: { at: string; ageMs: number } | null;
  /** mean latency of the successful attempts of the last hour */
  avgDeliveryMsLastHour: number | null;
}

export async function healthSummary(
  db: Queryable,
  appId: string | null = null,
): Promise<HealthSummary> {
  // Queue states come from the partial due index (the backlog, not the history) of the
  // periods that can hold queued rows (db/queries/queue-bounds.ts); the last hour's outcomes from latency_samples (one narrow row per attempt, BRIN on time).
  const { rows } = await db.query(
    `with backlog as (
       -- reads only the partial due index's rows: the backlog, not the history
       select status, count(*)::int as n, min(${waitingSinceSql("deliveries")}) as oldest
       from deliveries
       where queued and ($1::text is null or app_id = $1::text)
         and ${queuedBoundSql("deliveries", "$2")}
       group by status
     ),
     last_hour as (
       select count(*) filter (where l.ok)::int as ok, count(*) filter (where not l.ok)::int as failed,
              (avg(l.latency_ms) filter (where l.ok))::float8 as avg_ms
       from latency_samples l
       where l.at > now() - interval '1 hour'
         and ($1::text is null or l.endpoint_id in (select id from endpoints where app_id = $1::text))
     )
     select
       coalesce((select n from backlog where status = 'pending'), 0) as pending,
       coalesce((select n from backlog where status = 'failed'), 0) as awaiting_retry,
       coalesce((select n from backlog where status = 'in_flight'), 0) as in_flight,
       (select min(oldest) from backlog) as oldest_pending,
       h.ok as delivered_last_hour, h.failed as failed_last_hour, h.avg_ms
     from last_hour h`,
    [appId, await queuedFromMs(db)],
  );
  // every period's dead letters: a statement of its own (queue-bounds.ts)
  const deadLetter = await deadLetterTotal(db, appId);
  const r = rows[0];
  const oldest: Date | null = r.oldest_pending;
  return {
    pending: r.pending,
    awaitingRetry: r.awaiting_retry,
    inFlight: r.in_flight,
    deadLetter,
    deliveredLastHour: r.delivered_last_hour,
    failedLastHour: r.failed_last_hour,
    oldestPending: oldest
      ? { at: oldest.toISOString(), ageMs: Math.max(0, Date.now() - oldest.getTime()) }
      : null,
    avgDeliveryMsLastHour: r.avg_ms === null ? null : Math.round(r.avg_ms * 10) / 10,
  };
}
