/**
 * Exponential backoff with jitter for reconnecting to the database (docs/reliability.md):
 * after failure n (1-based) wait a random time between half and all of
 * `min(capMs, baseMs * 2^(n-1))`. The lower half keeps a failing loop from spinning; the
 * random upper half spreads many processes apart so they do not all knock at once when
 * PostgreSQL comes back.
 */
export interface Backoff {
  /** the wait after one more failure, in ms */
  next(): number;
  /** a success: the next failure starts from `baseMs` again */
  reset(): void;
  /** failures since the last success */
  readonly failures: number;
}

export interface BackoffOptions {
  /** baseMs: the first wait's upper bound. Default 100. */
  baseMs?: number;
  /** capMs: no wait is longer. Default 5_000. */
  capMs?: number;
  /** random in [0, 1); injectable for tests */
  random?: () => number;
}

export function makeBackoff(options: BackoffOptions = {}): Backoff {
  const { baseMs = 100, capMs = 5_000, random = Math.random } = options;
  let failures = 0;
  return {
    next() {
      failures++;
      // 2^30 is far past any cap; bounding the exponent keeps the number finite
      const ceiling = Math.min(capMs, baseMs * 2 ** Math.min(failures - 1, 30));
      return Math.round(ceiling / 2 + random() * (ceiling / 2));
    },
    reset() {
      failures = 0;
    },
    get failures() {
      return failures;
    },
  };
}
