/**
 * The delivery state machine's transitions as SQL (the states, the transition table and
 * `afterAttempt` are domain/delivery-states.ts; docs/delivery.md, Delivery states): each
 * transition written once, as the part the statements that move rows compose.
 *
 * The parts are SQL text with named parameters (db/named-sql.ts): a SET list reads the
 * expressions it is given, so each statement decides where the values come from.
 */

import { NOW_SQL } from "./clock.ts";

/**
 * Since when an undelivered row has been waiting, as SQL over a `deliveries` row (alias
 * given): a pending row waits from when it became due (a scheduled send or a paced requeue
 * is not late before its time), a retrying or in-flight one since its message was accepted.
 * Pending rows not due yet are not waiting at all (null).
 */
export const waitingSinceSql = (d: string) =>
  `case when ${d}.status = 'pending' then
          case when ${d}.next_attempt_at <= now() then greatest(${d}.created_at, ${d}.next_attempt_at) end
        else ${d}.created_at end`;

/** A row no worker holds: no claim token, no worker, no lease. */
const LEASE_CLEARED = "claim_token = null, claimed_by = null, lease_expires_at = null";

/**
 * claim: pending | failed → in_flight, under the claim's token. The lease itself is the
 * claim's row in `claims`; `lease_expires_at` on the row says when it runs out.
 */
export function claimSet(e: { token: string; workerId: string; leaseExpiresAt: string }): string {
  return `status = 'in_flight', claim_token = ${e.token}, claimed_by = ${e.workerId},
      lease_expires_at = ${e.leaseExpiresAt}`;
}

/** The rows a result or a hand-back may move: still in flight under the given claim token. */
export const heldBy = (d: string, token: string) =>
  `${d}.status = 'in_flight' and ${d}.claim_token = ${token}`;

/**
 * attempt: in_flight → delivered | failed | dead_letter (the status afterAttempt chose),
 * one attempt used (and, for a backpressure answer that gives it back, one more given
 * back: domain/backpressure.ts). `r` is the alias of the relation holding the result
 * columns: status, delay_ms (for failed), started_at, error_kind, error, status_code,
 * latency_ms, given_back (0 or 1).
 */
export function attemptSet(d: string, r: string): string {
  return `status = ${r}.status,
      attempt_count = ${d}.attempt_count + 1,
      attempts_given_back = ${d}.attempts_given_back + ${r}.given_back,
      next_attempt_at = case when ${r}.status = 'failed'
                             then ${NOW_SQL} + ${r}.delay_ms * interval '1 millisecond'
                             else ${d}.next_attempt_at end,
      delivered_at = case when ${r}.status = 'delivered' then ${NOW_SQL} else ${d}.delivered_at end,
      ${LEASE_CLEARED},
      last_attempt_at = ${r}.started_at,
      last_error_kind = ${r}.error_kind,
      last_error = ${r}.error,
      last_status_code = ${r}.status_code,
      last_response_ms = ${r}.latency_ms,
      updated_at = ${NOW_SQL}`;
}

/**
 * hand back: in_flight → pending (or failed, if it was tried before), its attempt budget
 * untouched: nothing was sent, or its worker died or stopped. It keeps the due time it was
 * claimed with (past, so due at once), which puts it at the head of its endpoint's queue:
 * set to now() it would wait behind every row that came due while it was held, and with a
 * backlog a dead worker's deliveries went out again a minute late (docs/worker-liveness.md).
 */
export const handBackSet = (d: string) =>
  `status = case when ${d}.attempt_count = 0 then 'pending' else 'failed' end,
      ${LEASE_CLEARED},
      updated_at = ${NOW_SQL}`;

/** The statuses an operator may cancel: not delivered yet and not in flight. */
export const CANCELABLE = `('pending', 'failed')`;

/** cancel: pending | failed → canceled. */
export const cancelSet = "status = 'canceled', updated_at = now()";

/**
 * The statuses a blocked key's head is skipped from (docs/delivery.md, Ordering): waiting
 * for its retry, or dead-lettered. Only the ordering-keys skip action uses it, and only on
 * a key's head (ops/ordering-keys.ts); the public cancel route keeps CANCELABLE.
 */
export const SKIPPABLE = `('failed', 'dead_letter')`;

/** skip: a blocked key's head, failed | dead_letter → canceled (the same SET as cancel). */
export const skipSet = cancelSet;

/** What set a row going again: an operator's requeue or resend, or a replay task. */
export type RequeueTrigger = "manual" | "replay";

/**
 * requeue (and resend, and replay): any row not in flight → pending with a fresh attempt
 * budget, the same message id, marked with its trigger ('manual' by default; a background
 * task's replay is 'replay', docs/recovery.md). `maxAttempts` and `dueAt` are SQL
 * expressions (a paced requeue spreads `dueAt` out).
 */
export function requeueSet(e: {
  maxAttempts: string;
  dueAt: string;
  trigger?: RequeueTrigger;
}): string {
  return `status = 'pending', attempt_count = 0, attempts_given_back = 0, max_attempts = ${e.maxAttempts},
      next_attempt_at = ${e.dueAt}, trigger = '${e.trigger ?? "manual"}',
      ${LEASE_CLEARED}, updated_at = now()`;
}
