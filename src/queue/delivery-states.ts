/**
 * The delivery state machine (docs/delivery.md, Delivery states). One row in `deliveries`
 * per (message, endpoint). Every transition is written here, once, as the SQL that performs
 * it; the statements that move rows (claim-deliveries.ts, record-results.ts,
 * release-deliveries.ts, the requeue and cancel in src/ops/dead-letters.ts) compose these
 * parts and add only which rows they pick.
 *
 *   pending ──claim──▶ in_flight ──2xx──────────────────────────▶ delivered
 *      ▲                  │ │ └──permanent failure (4xx, 3xx, 410) ─▶ dead_letter
 *      │                  │ └────transient failure, attempts left ──▶ failed
 *      │                  │      transient failure, none left ──────▶ dead_letter
 *      └──────────────────┴──handed back, no attempt used (released at shutdown, or its
 *                              claim's lease ran out: the worker died) ─▶ pending, or
 *                              failed if it was tried before
 *   failed ──claim, once next_attempt_at has passed──▶ in_flight
 *   pending | failed ──operator cancels──▶ canceled
 *   delivered | dead_letter | failed | canceled ──resend / requeue──▶ pending (fresh budget)
 *
 *   transition  from                                      to                             part
 *   claim       pending, failed (due)                     in_flight                      claimSet
 *   attempt     in_flight, same claim token               delivered, failed, dead_letter attemptSet
 *   hand back   in_flight, same claim token               pending, or failed if tried    handBackSet
 *   cancel      pending, failed                           canceled                       cancelSet
 *   requeue     delivered, dead_letter, failed, canceled  pending, fresh budget          requeueSet
 *
 * `next_attempt_at` is the time a row is next due: the scheduled attempt for pending and
 * failed rows. An in-flight row keeps the value it was claimed with (no index entry
 * changes, migration 0007); its lease is its claim's row in `claims`. Rows of disabled
 * endpoints are left where they are and wait; disabling never dead-letters.
 *
 * The parts are SQL text with named parameters (src/db/named-sql.ts): a SET list reads the
 * expressions it is given, so each statement decides where the values come from.
 */
import { type RetryPolicy, retryDelayMs, Verdict } from "../domain/retry-policy.ts";

export const DeliveryStatus = {
  pending: "pending",
  inFlight: "in_flight",
  delivered: "delivered",
  failed: "failed",
  deadLetter: "dead_letter",
  canceled: "canceled",
} as const;
export type DeliveryStatus = (typeof DeliveryStatus)[keyof typeof DeliveryStatus];

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
 * one attempt used. `r` is the alias of the relation holding the result columns: status,
 * delay_ms (for failed), started_at, error_kind, error, status_code, latency_ms.
 */
export function attemptSet(d: string, r: string): string {
  return `status = ${r}.status,
      attempt_count = ${d}.attempt_count + 1,
      next_attempt_at = case when ${r}.status = 'failed'
                             then now() + ${r}.delay_ms * interval '1 millisecond'
                             else ${d}.next_attempt_at end,
      delivered_at = case when ${r}.status = 'delivered' then now() else ${d}.delivered_at end,
      ${LEASE_CLEARED},
      last_attempt_at = ${r}.started_at,
      last_error_kind = ${r}.error_kind,
      last_error = ${r}.error,
      last_status_code = ${r}.status_code,
      last_response_ms = ${r}.latency_ms,
      updated_at = now()`;
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
      updated_at = now()`;

/** The statuses an operator may cancel: not delivered yet and not in flight. */
export const CANCELABLE = `('pending', 'failed')`;

/** cancel: pending | failed → canceled. */
export const cancelSet = "status = 'canceled', updated_at = now()";

/**
 * requeue (and resend): any row not in flight → pending with a fresh attempt budget, the
 * same message id, triggered by hand. `maxAttempts` and `dueAt` are SQL expressions (a
 * paced requeue spreads `dueAt` out).
 */
export function requeueSet(e: { maxAttempts: string; dueAt: string }): string {
  return `status = 'pending', attempt_count = 0, max_attempts = ${e.maxAttempts},
      next_attempt_at = ${e.dueAt}, trigger = 'manual',
      ${LEASE_CLEARED}, updated_at = now()`;
}

export interface Transition {
  status: DeliveryStatus;
  /** for failed: when the next attempt is due, in ms from now */
  retryDelayMs: number;
}

/** The state an in-flight delivery moves to after attempt number `attempt` (1-based). */
export function afterAttempt(
  verdict: Verdict,
  attempt: number,
  policy: RetryPolicy,
  retryAfterMs: number | null,
  random?: () => number,
): Transition {
  if (verdict === Verdict.success) return { status: DeliveryStatus.delivered, retryDelayMs: 0 };
  if (verdict === Verdict.permanent || attempt >= policy.maxAttempts) {
    return { status: DeliveryStatus.deadLetter, retryDelayMs: 0 };
  }
  return {
    status: DeliveryStatus.failed,
    retryDelayMs: retryDelayMs(policy, attempt, retryAfterMs, random),
  };
}
