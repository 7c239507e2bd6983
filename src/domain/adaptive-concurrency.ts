/**
 * Adaptive concurrency's declarations (docs/adaptive-concurrency.md): why an endpoint's
 * in-flight limit last moved, and the constants of the rule that moves it. The rule itself
 * is SQL, run in the statement that writes a batch of results (health/concurrency-limit.ts).
 */

/** Why the limit last moved, as the API shows it. */
export const ConcurrencyReason = {
  starting: "starting",
  growing: "growing",
  atMax: "at_max",
  resuming: "resuming",
  latencyRising: "latency_rising",
  rateLimited: "rate_limited",
  timeouts: "timeouts",
} as const;
export type ConcurrencyReason = (typeof ConcurrencyReason)[keyof typeof ConcurrencyReason];

/** The rule's constants (docs/adaptive-concurrency.md says why each). */
export const ADAPTIVE_RULE = {
  /** the limit of an adaptive endpoint with nothing learned yet */
  initialLimit: 1,
  /** a 429 without a pause, or a timeout: the limit is multiplied by this */
  cut: 0.5,
  /** answers slower than the floor times this are "latency rising" ... */
  latencyTolerance: 2,
  /** ... and only when at least this many ms slower (local jitter is not a trend) */
  latencySlackMs: 250,
  /** the latency cut: floor x tolerance / latency, within these */
  latencyCutMin: 0.5,
  latencyCutMax: 0.9,
} as const;
