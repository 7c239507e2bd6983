/**
 * Every transition of the circuit breaker (docs/delivery.md, Circuit breaker), one per
 * endpoint and shared by every worker: its state lives in endpoint_health.
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
 *   half_open ──the probe is lost (its worker died, or released it unsent)──▶ a new probe
 *   half_open ──the probe is answered with backpressure (429, 503 + Retry-After)──▶ stays
 *               half_open; once the pause and the probe's lease are over, a new probe
 *   any ──operator reset──▶ closed, cooldown back to base, failures 0, no pause
 *
 *   transition                 performed by                       part
 *   open → half_open           the claim (claim-deliveries.ts)    admitsClaimSql, claimRoomSql,
 *                                                                  probeStartSet, probeStartedEventsSql
 *   half_open → half_open      the claim, after a lost probe      admitsClaimSql, probeStartSet
 *   (a released probe)         the hand-back (release-deliveries) probeReleasedSet
 *   closed → open,             the result write (record-results)  outcomeTransitionsSql,
 *   half_open → closed | open                                      circuitSettings
 *   any → closed               the operator                       resetCircuit
 *
 * Backpressure answers (domain/backpressure.ts) are not failures: they neither count toward
 * the threshold nor decide a probe; they only pause the endpoint (paused_until) and start
 * its gradual resume (the adaptive in-flight limit, health/concurrency-limit.ts, read by
 * the claim). Only the probe's own result moves a
 * half-open circuit; results of requests that were already in flight when the circuit
 * opened update the failure count but no state. Every transition is written to
 * circuit_events (time, from, to, reason), apart from a lost probe's replacement (the
 * circuit stays half_open).
 *
 * All of them run with the endpoint's health row locked, so workers never race on a
 * transition: a claim locks the health rows of the circuits its snapshot shows not closed
 * (after its claim rows, endpoint_claim_state), and reads a closed one without waiting for
 * a result write that holds it, as a claim made just before that write would have read it
 * (docs/delivery.md, "Claims and result writes lock different rows"). Every writer of
 * endpoint_health locks its rows in endpoint id order, and nothing holding a health row
 * waits for a claim row, so none can deadlock. The SQL parts name their parameters (src/db/named-sql.ts).
 */
import type { HealthConfig } from "../config.ts";
import { namedSql } from "../db/named-sql.ts";
import type { Queryable } from "../db/pool.ts";
import { NOW_SQL } from "../db/sql/clock.ts";
import { inFlightSql } from "../db/sql/in-flight.ts";
import { effectiveSql } from "../domain/endpoint-policy-derived.ts";
import { concurrencySet, concurrencyStepSql } from "./concurrency-limit.ts";

export const CircuitState = { closed: "closed", open: "open", halfOpen: "half_open" } as const;
export type CircuitState = (typeof CircuitState)[keyof typeof CircuitState];

// --- claim: open → half_open ----------------------------------------------------------

/**
 * Whether the circuit of health row `h` lets a claim take rows: closed, or open with its
 * cooldown over (the probe), or half_open with its probe lost (a new probe).
 */
export const admitsClaimSql = (h: string) =>
  `(${h}.circuit_state = 'closed'
         or (${h}.circuit_state = 'open' and ${h}.open_until <= ${NOW_SQL})
         or (${h}.circuit_state = 'half_open' and ${h}.probe_until <= ${NOW_SQL}))`;

/**
 * The rows a claim may take from an endpoint whose circuit is in `state` (an SQL
 * expression): its free room if closed, else the one probe.
 */
export const claimRoomSql = (state: string, freeRoom: string) =>
  `case when ${state} = 'closed' then ${freeRoom} else 1 end`;

/**
 * The SET items of the claim's health update: a circuit that was not closed becomes
 * half_open with the claimed row as its probe, lost after `probeUntil` (SQL expressions;
 * `before` is the state the claim read).
 */
export function probeStartSet(e: {
  h: string;
  before: string;
  probeId: string;
  probeUntil: string;
}): string {
  return `circuit_state = case when ${e.before} = 'closed' then 'closed' else 'half_open' end,
      probe_delivery_id = case when ${e.before} = 'closed' then ${e.h}.probe_delivery_id else ${e.probeId} end,
      probe_until = case when ${e.before} = 'closed' then ${e.h}.probe_until else ${e.probeUntil} end`;
}

/** The claim's insert into circuit_events: open → half_open for the endpoints of `rel`. */
export const probeStartedEventsSql = (rel: string, endpointId: string, before: string) =>
  `insert into circuit_events (endpoint_id, from_state, to_state, reason)
  select ${endpointId}, 'open', 'half_open', 'cooldown over; one probe sent'
  from ${rel} where ${before} = 'open'`;

// --- hand-back: a released probe -----------------------------------------------------

/**
 * The SET item of the hand-back's health update: a probe handed back never ran, so the
 * next claim may probe again at once (`ids`: an SQL bigint[] of the rows handed back).
 */
export const probeReleasedSet = (h: string, ids: string) =>
  `probe_until = case when ${h}.probe_delivery_id = any (${ids}) then ${NOW_SQL} else ${h}.probe_until end`;

// --- result write: closed → open, half_open → closed | open --------------------------

/** The parameters outcomeTransitionsSql reads, by name. */
export interface CircuitSettings {
  failureThreshold: number;
  cooldownMs: number;
  cooldownCapMs: number;
  verySlowFailureThreshold: number;
}

export const circuitSettings = (h: HealthConfig): CircuitSettings => ({
  failureThreshold: h.failureThreshold,
  cooldownMs: h.cooldownMs,
  cooldownCapMs: h.cooldownCapMs,
  verySlowFailureThreshold: h.verySlowFailureThreshold,
});

/**
 * The CTEs that apply a batch's outcomes to endpoint_health, for the statement that writes
 * the batch (src/queue/record-results.ts): lock the endpoints' health rows, compute each
 * one's next state, write it and record the transitions in circuit_events. They read a
 * relation `i`, one row per endpoint: endpoint_id, applied (slots to release), any_ok,
 * trailing_failures, last_ok_at, last_fail_at, probe_id and probe_ok (the probe's applied
 * result, if the batch holds it), pause_ms and ok_count (its delivered answers: they widen
 * a resuming endpoint's room); and the CircuitSettings parameters. The
 * locks are held until the statement's transaction commits.
 */
export const outcomeTransitionsSql = `
-- The health rows are locked here, in id order (every writer of endpoint_health locks in
-- that order, so none can deadlock), and read from the lock: a row another transaction
-- changed while this one waited comes back in its newest version.
locked as (
  select h.endpoint_id, h.circuit_state, h.probe_delivery_id, h.very_slow, h.cooldown_ms,
         h.consecutive_failures, h.concurrency_limit, h.concurrency_reason,
         h.concurrency_since, h.latency_floor_ms,
         -- (the claims' count as of this statement's snapshot, not locked: claims never wait
         -- for a result write, nor it for them; it only steers the adaptive limit's growth)
         ${inFlightSql("c", "h")} as in_flight
  from endpoint_health h
  join endpoint_claim_state c on c.endpoint_id = h.endpoint_id
  where h.endpoint_id in (select endpoint_id from i)
  order by h.endpoint_id
  for update of h
),
cur as (
  select h.endpoint_id, h.circuit_state, h.probe_delivery_id, h.very_slow,
         ${effectiveSql("e", "cooldownMs", "$cooldownMs")} as base_cooldown,
         coalesce(h.cooldown_ms, ${effectiveSql("e", "cooldownMs", "$cooldownMs")}) as cooldown,
         case when i.any_ok then i.trailing_failures
              else h.consecutive_failures + i.trailing_failures end as failures,
         case when h.very_slow
              then least(${effectiveSql("e", "failureThreshold", "$failureThreshold")},
                         $verySlowFailureThreshold::integer)
              else ${effectiveSql("e", "failureThreshold", "$failureThreshold")} end as threshold,
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
${concurrencyStepSql(effectiveSql("e", "maxInFlight"), `${effectiveSql("e", "adaptiveConcurrency")} = 'on'`)},
changed as (
  update endpoint_health h
  set released = h.released + i.applied,
      consecutive_failures = case when n.to_state = 'closed' and n.circuit_state = 'half_open' then 0
                                  else n.failures end,
      last_success_at = greatest(h.last_success_at, i.last_ok_at),
      last_failure_at = greatest(h.last_failure_at, i.last_fail_at),
      paused_until = case when i.pause_ms is null then h.paused_until
                          else greatest(coalesce(h.paused_until, ${NOW_SQL}), ${NOW_SQL} + i.pause_ms * interval '1 millisecond') end,
      -- the adaptive in-flight limit and the gradual resume after a pause (concurrency-limit.ts)
      ${concurrencySet("c")},
      circuit_state = n.to_state,
      cooldown_ms = case
        when n.to_state = n.circuit_state then h.cooldown_ms
        when n.to_state = 'closed' then null
        when n.circuit_state = 'half_open'
          then least(greatest($cooldownCapMs::integer, n.base_cooldown), n.cooldown * 2)
        else n.cooldown end,
      opened_at = case when n.to_state = 'open' and n.circuit_state <> 'open' then ${NOW_SQL} else h.opened_at end,
      open_until = case
        when n.to_state = n.circuit_state then h.open_until
        when n.to_state = 'closed' then null
        when n.circuit_state = 'half_open'
          then ${NOW_SQL} + least(greatest($cooldownCapMs::integer, n.base_cooldown), n.cooldown * 2)
                       * interval '1 millisecond'
        else ${NOW_SQL} + n.cooldown * interval '1 millisecond' end,
      probe_delivery_id = case when n.to_state <> n.circuit_state then null else h.probe_delivery_id end,
      probe_until = case when n.to_state <> n.circuit_state then null else h.probe_until end
  from i join nxt n on n.endpoint_id = i.endpoint_id
  join conc c on c.endpoint_id = i.endpoint_id
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

// --- operator: any → closed -----------------------------------------------------------

const RESET_SQL = namedSql<{ endpointId: string }>(
  `
with old as (
  select endpoint_id, circuit_state from endpoint_health
  where endpoint_id = $endpointId::text
  for update
),
reset as (
  update endpoint_health h
  set circuit_state = 'closed', consecutive_failures = 0, cooldown_ms = null, opened_at = null,
      open_until = null, probe_delivery_id = null, probe_until = null, paused_until = null,
      concurrency_limit = null, concurrency_reason = null, concurrency_since = null
  from old
  where h.endpoint_id = old.endpoint_id
  returning old.circuit_state as from_state
),
event as (
  insert into circuit_events (endpoint_id, from_state, to_state, reason)
  select $endpointId::text, coalesce((select from_state from reset), 'closed'), 'closed',
         'reset by operator'
)
select coalesce((select from_state from reset), 'closed') as from_state
`,
  "hookrelay_reset_circuit",
);

/**
 * Forces an endpoint's circuit closed (failures 0, base cooldown, no Retry-After pause)
 * and records it in circuit_events; returns the state it was in. One statement, so it is
 * atomic on a pool as inside a transaction. The endpoint's waiting rows are due at once:
 * the caller wakes the workers (NOTIFY on the work channel), or they wait for the next poll.
 */
export async function resetCircuit(db: Queryable, endpointId: string): Promise<CircuitState> {
  const { rows } = await db.query(RESET_SQL.query({ endpointId }));
  return rows[0].from_state;
}
