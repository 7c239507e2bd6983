/**
 * Backpressure (docs/delivery.md, Backpressure): a receiver that asks us to slow down is
 * not failing. A 429, or a 503 with a usable Retry-After, is a backpressure answer (error
 * kind `rate_limited`): it pauses the whole endpoint for the time asked, never counts
 * toward the circuit breaker, and gives its attempt back, up to BACKPRESSURE_GIVE_BACKS
 * times per delivery (after that it uses an attempt like any failure). The attempt is still
 * recorded, with the receiver's answer.
 *
 * The pause's rules, for a Retry-After already read strictly (delivery/retry-after.ts:
 * garbage, a sign, a fraction are no value at all, a past date is 0, a huge value is a day):
 *   - no usable value: a 429 pauses nothing; its delivery waits the normal backoff.
 *     A 503 without one is an ordinary failure (not backpressure);
 *   - below MIN_PAUSE_MS (0, a date in the past): MIN_PAUSE_MS, so a receiver answering
 *     "Retry-After: 0" to every request cannot make us spin;
 *   - above the endpoint's retryCapMs (HOOKRELAY_RETRY_CAP_MS by default, 1 h): the cap.
 */

/** How many attempts backpressure answers may give back to one delivery. */
export const BACKPRESSURE_GIVE_BACKS = 10;

/** The shortest pause a backpressure answer with a Retry-After sets. */
export const MIN_PAUSE_MS = 1000;

/** Whether an HTTP answer is backpressure: 429 always, 503 only with a usable Retry-After. */
export function isBackpressure(status: number, retryAfterMs: number | null): boolean {
  return status === 429 || (status === 503 && retryAfterMs !== null);
}

/** The endpoint's pause for a Retry-After value (ms, or null: none), within [MIN_PAUSE_MS, capMs]. */
export function pauseFor(retryAfterMs: number | null, capMs: number): number | null {
  if (retryAfterMs === null) return null;
  return Math.min(capMs, Math.max(MIN_PAUSE_MS, retryAfterMs));
}

/** Whether a backpressure answer gives its attempt back, with `givenBack` already given back. */
export const givesBack = (givenBack: number) => givenBack < BACKPRESSURE_GIVE_BACKS;
