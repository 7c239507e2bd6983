/**
 * The delivery state machine (docs/delivery.md, Delivery states). One row in `deliveries`
 * per (message, endpoint). Its states, and the rule that picks the state after an attempt
 * (`afterAttempt`), are here; every transition is written once, as the SQL that performs
 * it, in db/sql/delivery-states.ts (the part named in the table below), and the statements
 * that move rows (queue/claim-deliveries.ts, queue/record-results.ts,
 * queue/release-deliveries.ts, the requeue and cancel in ops/dead-letters.ts, the skip in
 * ops/ordering-keys.ts) compose those parts and add only which rows they pick.
 *
 *   pending ──claim──▶ in_flight ──2xx──────────────────────────▶ delivered
 *      ▲                  │ │ └──permanent failure (4xx, 3xx, 410) ─▶ dead_letter
 *      │                  │ └────transient failure, attempts left ──▶ failed
 *      │                  │      transient failure, none left ──────▶ dead_letter
 *      └──────────────────┴──handed back, no attempt used (released at shutdown, or its
 *                              claim's lease ran out: the worker died) ─▶ pending, or
 *                              failed if it was tried before
 *   failed ──claim, once next_attempt_at has passed──▶ in_flight
 *   (a backpressure answer, 429 or 503 + Retry-After, is a transient failure that gives its
 *   attempt back up to BACKPRESSURE_GIVE_BACKS times: domain/backpressure.ts)
 *   pending | failed ──operator cancels──▶ canceled
 *   failed | dead_letter ──operator skips a blocked key's head (ordering)──▶ canceled
 *   (new) ──message for a disabled endpoint──▶ pending (held), or canceled (whileDisabled skip)
 *   delivered | dead_letter | failed | canceled ──resend / requeue──▶ pending (fresh budget)
 *
 *   transition  from                                      to                             part
 *   claim       pending, failed (due)                     in_flight                      claimSet
 *   attempt     in_flight, same claim token               delivered, failed, dead_letter attemptSet
 *   hand back   in_flight, same claim token               pending, or failed if tried    handBackSet
 *   cancel      pending, failed                           canceled                       cancelSet
 *   skip        a blocked key's head: failed, dead_letter canceled                       skipSet
 *   requeue     delivered, dead_letter, failed, canceled  pending, fresh budget          requeueSet
 *
 * `next_attempt_at` is the time a row is next due: the scheduled attempt for pending and
 * failed rows. An in-flight row keeps the value it was claimed with (no index entry
 * changes, migration 0007); its lease is its claim's row in `claims`.
 *
 * Disabled endpoints (docs/delivery.md, "While an endpoint is disabled"; the wording for
 * people is domain/while-disabled.ts): the claim passes them by, so their queued rows stay
 * where they are and wait, and disabling never dead-letters. A message that arrives
 * meanwhile still gets its row (queue/enqueue-message.ts): pending, held like the others
 * and sent oldest first on enable, or, when the endpoint skips while disabled, canceled
 * with last_error_kind 'endpoint_disabled', which only replay-missing or a resend sends.
 */
import { type RetryPolicy, retryDelayMs, Verdict } from "./retry-policy.ts";

export const DeliveryStatus = {
  pending: "pending",
  inFlight: "in_flight",
  delivered: "delivered",
  failed: "failed",
  deadLetter: "dead_letter",
  canceled: "canceled",
} as const;
export type DeliveryStatus = (typeof DeliveryStatus)[keyof typeof DeliveryStatus];

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
