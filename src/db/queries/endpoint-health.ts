/**
 * Endpoint health as the API shows it: the circuit and counters of endpoint_health (kept
 * by the workers and the maintenance runner, src/health), the endpoint's limits and its
 * queue, and the circuit's history.
 */
import { effectiveSql } from "../../domain/endpoint-policy-derived.ts";
import type { Queryable } from "../pool.ts";
import { waitingSinceSql } from "../sql/delivery-states.ts";
import { inFlightSql } from "../sql/in-flight.ts";
import type { PageWindow } from "./page-window.ts";
import { deadLetterCounts, queuedBoundSql, queuedFromMs } from "./queue-bounds.ts";

export interface EndpointHealthRow {
  id: string;
  app_id: string;
  url: string;
  disabled: boolean;
  failure_threshold: number | null;
  /** the endpoint's configured cooldown (cooldown_ms is the one the next opening uses) */
  base_cooldown_ms: number | null;
  max_in_flight: number | null;
  /** rate_per_second, or Svix's throttle_rate when that is unset */
  rate_per_second: number | null;
  rate_per_minute: number | null;
  rate_per_hour: number | null;
  circuit_state: "closed" | "open" | "half_open";
  consecutive_failures: number;
  cooldown_ms: number | null;
  opened_at: Date | null;
  open_until: Date | null;
  in_flight: number;
  paused_until: Date | null;
  /** the adaptive in-flight limit (health/concurrency-limit.ts); null: nothing learned yet */
  concurrency_limit: number | null;
  /** why it last moved (ConcurrencyReason); null: never */
  concurrency_reason: string | null;
  concurrency_since: Date | null;
  /** the endpoint's own adaptiveConcurrency; null: the process default */
  adaptive_concurrency: "on" | "off" | null;
  /** http, amqp or nats (a broker's adaptive limit starts at maxInFlight) */
  destination_kind: string;
  last_success_at: Date | null;
  last_failure_at: Date | null;
  p50_ms: number | null;
  p95_ms: number | null;
  p99_ms: number | null;
  samples: number;
  success_rate: number | null;
  slow: boolean;
  very_slow: boolean;
  stats_at: Date | null;
  /** pending and awaiting retry */
  pending: number;
  oldest_pending_at: Date | null;
  dead_letter: number;
}

const HEALTH_SELECT = `
  select e.id, e.app_id, e.url, e.disabled, e.failure_threshold, e.cooldown_ms as base_cooldown_ms,
         e.max_in_flight, ${effectiveSql("e", "ratePerSecond")} as rate_per_second,
         e.rate_per_minute, e.rate_per_hour,
         h.circuit_state, h.consecutive_failures, h.cooldown_ms, h.opened_at, h.open_until,
         ${inFlightSql("c", "h")} as in_flight, h.paused_until, h.concurrency_limit, h.concurrency_reason,
         h.concurrency_since, e.adaptive_concurrency, e.destination_kind, h.last_success_at,
         h.last_failure_at,
         h.p50_ms, h.p95_ms, h.p99_ms, h.samples, h.success_rate, h.slow, h.very_slow, h.stats_at,
         q.pending, q.oldest_pending_at
  from endpoints e
  join endpoint_health h on h.endpoint_id = e.id
  join endpoint_claim_state c on c.endpoint_id = e.id
  -- per endpoint, over the partial indexes of queued rows (0007_hot_claims.sql), in the
  -- periods that can hold one ($1: queue-bounds.ts)
  cross join lateral (
    select count(*) filter (where d.status in ('pending', 'failed'))::int as pending,
           min(${waitingSinceSql("d")}) as oldest_pending_at
    from deliveries d
    where d.endpoint_id = e.id and d.queued and ${queuedBoundSql("d", "$1")}
  ) q`;

/** The rows with their dead letters counted (a statement of its own: every period's). */
async function withDeadLetters(
  db: Queryable,
  rows: Omit<EndpointHealthRow, "dead_letter">[],
): Promise<EndpointHealthRow[]> {
  const counts = await deadLetterCounts(
    db,
    rows.map((r) => r.id),
  );
  return rows.map((r) => ({ ...r, dead_letter: counts.get(r.id) ?? 0 }));
}

export async function getEndpointHealth(
  db: Queryable,
  endpointId: string,
): Promise<EndpointHealthRow | null> {
  const { rows } = await db.query<EndpointHealthRow>(`${HEALTH_SELECT} where e.id = $2::text`, [
    await queuedFromMs(db),
    endpointId,
  ]);
  return (await withDeadLetters(db, rows))[0] ?? null;
}

/** Narrows the health listing; null means "any". */
export interface EndpointHealthFilter {
  appId: string | null;
  circuitState: string | null;
  slow: boolean | null;
}

/** A page of every endpoint's health, in endpoint id order. */
export async function listEndpointHealth(
  db: Queryable,
  filter: EndpointHealthFilter,
  page: PageWindow,
): Promise<EndpointHealthRow[]> {
  const { rows } = await db.query<EndpointHealthRow>(
    `${HEALTH_SELECT}
     where ($2::text is null or e.id ${page.op} $2::text)
       and ($4::text is null or e.app_id = $4::text)
       and ($5::text is null or h.circuit_state = $5::text)
       and ($6::boolean is null or h.slow = $6::boolean)
     order by e.id ${page.direction} limit $3::integer`,
    [
      await queuedFromMs(db),
      page.cursor,
      page.limit,
      filter.appId,
      filter.circuitState,
      filter.slow,
    ],
  );
  return withDeadLetters(db, rows);
}

export interface CircuitEventRow {
  at: Date;
  from_state: string;
  to_state: string;
  reason: string;
}

/** The endpoint's latest circuit transitions, newest first. */
export async function circuitHistory(
  db: Queryable,
  endpointId: string,
  limit = 50,
): Promise<CircuitEventRow[]> {
  const { rows } = await db.query<CircuitEventRow>(
    `select at, from_state, to_state, reason from circuit_events
     where endpoint_id = $1::text order by id desc limit $2::integer`,
    [endpointId, limit],
  );
  return rows;
}
