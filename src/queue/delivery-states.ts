/**
 * The delivery state machine (SPEC §2). One row in `deliveries` per (message, endpoint).
 *
 *   pending ──claim──▶ in_flight ──2xx──────────────────────────▶ delivered
 *      ▲                  │ │ └──permanent failure (4xx, 3xx, 410) ─▶ dead_letter
 *      │                  │ └────transient failure, attempts left ──▶ failed
 *      │                  │      transient failure, none left ──────▶ dead_letter
 *      │                  └──lease expired (worker died) ─▶ due again, claimable as it is
 *      │                  └──released at shutdown ─▶ pending (or failed if it had attempts)
 *   failed ──claim, once next_attempt_at has passed──▶ in_flight
 *   pending | failed ──operator cancels──▶ canceled
 *   delivered | dead_letter | failed | canceled ──resend / requeue──▶ pending (fresh budget)
 *
 * `next_attempt_at` is the time a row is next due: the scheduled attempt for pending and
 * failed rows, the lease expiry for in_flight rows. Rows of disabled endpoints are left
 * where they are and wait; disabling never dead-letters.
 */
import { type RetryPolicy, retryDelayMs, Verdict } from "../delivery/retry-policy.ts";

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
