/**
 * Why did these messages die? Each endpoint's dead letters are matched against known
 * patterns, in the order of this table (first match wins); each carries the action an
 * operator should take. Thresholds are data, tested against fixtures built for each.
 */

export interface DeadLetterShape {
  count: number;
  /** dead letters whose last answer was 401 or 403 */
  credentials: number;
  /** ... was 429 */
  rateLimited: number;
  /** the most dead letters inside any one 15-minute window */
  maxIn15Minutes: number;
  /** first and last time a delivery died */
  firstAt: Date;
  lastAt: Date;
  /** distinct hours in which deliveries died */
  distinctHours: number;
  // postback endpoints (README.md, Postbacks)
  /** dead letters whose payload lacked a field the URL template needs (error kind missing_field) */
  missingField?: number;
  /** ... whose 2xx body broke the endpoint's success rule (error kind body_rule) */
  bodyRule?: number;
}

export interface Pattern {
  pattern:
    | "missing_field"
    | "body_rule"
    | "credentials"
    | "rate_limited"
    | "outage_cluster"
    | "gradual_accumulation"
    | "mixed";
  suggestedAction: string;
}

const HOUR = 3_600_000;

export const PATTERNS: ReadonlyArray<Pattern & { matches(s: DeadLetterShape): boolean }> = [
  // first: these name their cause for certain (nothing was sent, or the tracker said no)
  {
    pattern: "missing_field",
    matches: (s) => (s.missingField ?? 0) / s.count >= 0.5,
    suggestedAction:
      "The messages lack fields the endpoint's URL template needs, so nothing was sent (the attempt's error names the placeholder): have the producer send them, or set missingFields to \"empty\" if the tracker accepts empty values, then requeue.",
  },
  {
    pattern: "body_rule",
    matches: (s) => (s.bodyRule ?? 0) / s.count >= 0.5,
    suggestedAction:
      "The receiver answered 2xx with a refusal in the body (the endpoint's successRule): read the stored responses (a duplicate, an unknown click id, a bad token), fix the cause, then requeue the ones worth sending again.",
  },
  {
    pattern: "credentials",
    matches: (s) => s.credentials / s.count >= 0.5,
    suggestedAction:
      "The receiver rejects hookrelay's credentials (401/403): fix the key or token in the endpoint's headers or URL, then requeue the endpoint's dead letters.",
  },
  {
    pattern: "rate_limited",
    matches: (s) => s.rateLimited / s.count >= 0.5,
    suggestedAction:
      "The receiver is rate limiting (429): set ratePerSecond/ratePerMinute on the endpoint below its limit, then requeue; requeued deliveries are released at that pace.",
  },
  {
    pattern: "outage_cluster",
    matches: (s) => s.count >= 5 && s.maxIn15Minutes / s.count >= 0.6,
    suggestedAction:
      "Most deaths fall in one short span: the endpoint was down. Confirm it is back up, then requeue the endpoint's dead letters.",
  },
  {
    pattern: "gradual_accumulation",
    matches: (s) =>
      s.lastAt.getTime() - s.firstAt.getTime() >= 24 * HOUR &&
      s.distinctHours >= 3 &&
      s.maxIn15Minutes / s.count <= 0.25,
    suggestedAction:
      "A few deaths at a time, spread out: likely specific payloads the receiver refuses. Inspect individual attempts' responses before requeueing.",
  },
];

const MIXED: Pattern = {
  pattern: "mixed",
  suggestedAction:
    "No single cause stands out: look at the most common errors and status codes below.",
};

export function detectPattern(shape: DeadLetterShape): Pattern {
  if (shape.count === 0) return MIXED;
  const hit = PATTERNS.find((p) => p.matches(shape));
  return hit ? { pattern: hit.pattern, suggestedAction: hit.suggestedAction } : MIXED;
}
