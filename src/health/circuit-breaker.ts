/**
 * The circuit breaker, one per endpoint, shared by every worker (state in endpoint_health).
 *
 *   closed ──N consecutive failed attempts──▶ open (cooldown = base, 300 s by default)
 *      ▲          N = failure threshold (10), or the lowered one (3) while the endpoint
 *      │          is very slow (p95 above 5 s)
 *      │
 *   open ──cooldown over: the next claim takes exactly ONE due delivery──▶ half_open
 *      │     (no request is sent and no attempt used while open: the claim skips it)
 *      │
 *   half_open ──the probe succeeds──▶ closed, cooldown back to base, failures 0
 *   half_open ──the probe fails──────▶ open, cooldown doubled (capped at 1 h)
 *   half_open ──the probe is lost (worker died; its lease ran out)──▶ a new probe is claimed
 *   any ──operator reset──▶ closed, cooldown back to base, failures 0
 *
 * Only the probe's own result moves a half-open circuit; results of requests that were
 * already in flight when the circuit opened update the failure count but no state.
 * Every transition is written to circuit_events (time, from, to, reason).
 *
 * The claim query (src/queue/claim-deliveries.ts) performs open → half_open; the statement
 * that writes a batch of results (src/queue/record-results.ts) applies their outcomes
 * with the SQL below. Both run with the endpoint's health row locked, so workers never race
 * on a transition.
 */
import type { HealthConfig } from "../config.ts";

export const CircuitState = { closed: "closed", open: "open", halfOpen: "half_open" } as const;
export type CircuitState = (typeof CircuitState)[keyof typeof CircuitState];

/**
 * What one batch of results says about one endpoint, apart from what depends on which
 * results were stale (how many in-flight slots are released, whether the probe's result
 * counts): the statement that writes the batch works that out from the rows it moved.
 */
export interface EndpointOutcome {
  endpointId: string;
  /** the batch holds at least one success */
  anyOk: boolean;
  /** failures after the batch's last success (all failures if none succeeded) */
  trailingFailures: number;
  lastOkAt: Date | null;
  lastFailAt: Date | null;
  /** pause the endpoint this long (Retry-After on 429/503, already clamped) */
  pauseMs: number | null;
}

export interface AttemptOutcome {
  endpointId: string;
  success: boolean;
  startedAt: Date;
  pauseMs: number | null;
}

/** Folds a batch of attempt outcomes into one outcome per endpoint, in endpoint id order. */
export function summarizeOutcomes(attempts: readonly AttemptOutcome[]): EndpointOutcome[] {
  const byEndpoint = new Map<string, AttemptOutcome[]>();
  for (const a of attempts) {
    const list = byEndpoint.get(a.endpointId);
    if (list) list.push(a);
    else byEndpoint.set(a.endpointId, [a]);
  }
  const out: EndpointOutcome[] = [];
  for (const [endpointId, list] of byEndpoint) {
    list.sort((a, b) => a.startedAt.getTime() - b.startedAt.getTime());
    let trailing = 0;
    let anyOk = false;
    let lastOkAt: Date | null = null;
    let lastFailAt: Date | null = null;
    let pauseMs: number | null = null;
    for (const a of list) {
      if (a.success) {
        anyOk = true;
        trailing = 0;
        lastOkAt = a.startedAt;
      } else {
        trailing++;
        lastFailAt = a.startedAt;
      }
      if (a.pauseMs !== null) pauseMs = Math.max(pauseMs ?? 0, a.pauseMs);
    }
    out.push({ endpointId, anyOk, trailingFailures: trailing, lastOkAt, lastFailAt, pauseMs });
  }
  return out.sort((a, b) =>
    a.endpointId < b.endpointId ? -1 : a.endpointId > b.endpointId ? 1 : 0,
  );
}

/** The health settings applyOutcomesSql reads, in its parameter order. */
export const healthSettings = (h: HealthConfig) => [
  h.failureThreshold,
  h.cooldownMs,
  h.cooldownCapMs,
  h.verySlowFailureThreshold,
];

/**
 * The CTEs that apply a batch's outcomes to endpoint_health, for the statement that writes
 * the batch (src/queue/record-results.ts): lock the endpoints' health rows, compute each
 * one's next state, write it and record the transitions in circuit_events. They read a
 * relation `i`, one row per endpoint: endpoint_id, applied (slots to release), any_ok,
 * trailing_failures, last_ok_at, last_fail_at, probe_id and probe_ok (the probe's applied
 * result, if the batch holds it) and pause_ms; and healthSettings(...) as parameters
 * $first to $first+3. The locks are held until the statement's transaction commits.
 */
export function applyOutcomesSql(first: number): string {
  const p = (k: number) => `$${first + k}`;
  return `
-- The health rows are locked here, in id order (every writer of endpoint_health locks in
-- that order, so none can deadlock), and read from the lock: a row another transaction
-- changed while this one waited comes back in its newest version.
locked as (
  select h.endpoint_id, h.circuit_state, h.probe_delivery_id, h.very_slow, h.cooldown_ms,
         h.consecutive_failures
  from endpoint_health h
  where h.endpoint_id in (select endpoint_id from i)
  order by h.endpoint_id
  for update
),
cur as (
  select h.endpoint_id, h.circuit_state, h.probe_delivery_id, h.very_slow,
         coalesce(e.cooldown_ms, ${p(1)}::integer) as base_cooldown,
         coalesce(h.cooldown_ms, coalesce(e.cooldown_ms, ${p(1)}::integer)) as cooldown,
         case when i.any_ok then i.trailing_failures
              else h.consecutive_failures + i.trailing_failures end as failures,
         case when h.very_slow then least(coalesce(e.failure_threshold, ${p(0)}::integer), ${p(3)}::integer)
              else coalesce(e.failure_threshold, ${p(0)}::integer) end as threshold,
         i.probe_id, i.probe_ok
  from locked h
  join i on i.endpoint_id = h.endpoint_id
  join endpoints e on e.id = h.endpoint_id
),
nxt as (
  select c.*,
         case
           when c.circuit_state = 'half_open' and c.probe_id = c.probe_delivery_id and c.probe_ok
             then 'closed'
           when c.circuit_state = 'half_open' and c.probe_id = c.probe_delivery_id and not c.probe_ok
             then 'open'
           when c.circuit_state = 'closed' and c.failures >= c.threshold
             then 'open'
           else c.circuit_state
         end as to_state
  from cur c
),
changed as (
  update endpoint_health h
  set in_flight = greatest(h.in_flight - i.applied, 0),
      consecutive_failures = case when n.to_state = 'closed' and n.circuit_state = 'half_open' then 0
                                  else n.failures end,
      last_success_at = greatest(h.last_success_at, i.last_ok_at),
      last_failure_at = greatest(h.last_failure_at, i.last_fail_at),
      paused_until = case when i.pause_ms is null then h.paused_until
                          else greatest(coalesce(h.paused_until, now()), now() + i.pause_ms * interval '1 millisecond') end,
      circuit_state = n.to_state,
      cooldown_ms = case
        when n.to_state = n.circuit_state then h.cooldown_ms
        when n.to_state = 'closed' then null
        when n.circuit_state = 'half_open' then least(greatest(${p(2)}::integer, n.base_cooldown), n.cooldown * 2)
        else n.cooldown end,
      opened_at = case when n.to_state = 'open' and n.circuit_state <> 'open' then now() else h.opened_at end,
      open_until = case
        when n.to_state = n.circuit_state then h.open_until
        when n.to_state = 'closed' then null
        when n.circuit_state = 'half_open'
          then now() + least(greatest(${p(2)}::integer, n.base_cooldown), n.cooldown * 2) * interval '1 millisecond'
        else now() + n.cooldown * interval '1 millisecond' end,
      probe_delivery_id = case when n.to_state <> n.circuit_state then null else h.probe_delivery_id end,
      probe_until = case when n.to_state <> n.circuit_state then null else h.probe_until end
  from i join nxt n on n.endpoint_id = i.endpoint_id
  where h.endpoint_id = i.endpoint_id
  returning h.endpoint_id, n.circuit_state as from_state, h.circuit_state as to_state,
            n.failures, n.threshold, h.cooldown_ms
),
transitions as (
  insert into circuit_events (endpoint_id, from_state, to_state, reason)
  select endpoint_id, from_state, to_state,
         case
           when from_state = 'closed' then
             failures || ' consecutive failed attempts (threshold ' || threshold || ')'
           when to_state = 'open' then
             'probe failed; cooling down for ' || (cooldown_ms / 1000) || ' s'
           else 'probe succeeded'
         end
  from changed
  where from_state <> to_state
)`;
}
