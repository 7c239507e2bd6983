/**
 * Why did these messages die? Each endpoint's dead letters are matched against known
 * patterns, in the order of this table (first match wins); each carries the action an
 * operator should take. Thresholds are data, tested against fixtures built for each, and
 * README.md ("Dead-letter patterns") lists the same rows word for word (a test keeps them
 * equal).
 *
 * The order: first what names its cause for certain from the receiver's answers (nothing
 * was sent, a 410, a 401/403, a 429, timeouts), then what only the times of death say (an
 * outage, failures spread out), and "mixed" only when no row holds.
 */

export interface DeadLetterShape {
  count: number;
  /** dead letters whose last answer was 401 or 403 */
  credentials: number;
  /** ... was 429 */
  rateLimited: number;
  /** ... was 410 Gone (error kind gone) */
  gone?: number;
  /** the newest death's last answer was 410 Gone */
  lastGone?: boolean;
  /** ... whose last attempt timed out (error kind timeout) */
  timeouts?: number;
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
  // egress (docs/egress.md)
  /** ... whose egress proxy was down or refused the tunnel (error kind proxy) */
  proxy?: number;
  /** ... whose TLS handshake failed (error kind tls) */
  tls?: number;
}

export const PATTERN_NAMES = [
  "missing_field",
  "body_rule",
  "proxy",
  "tls",
  "gone",
  "credentials",
  "rate_limited",
  "timeouts",
  "outage",
  "intermittent",
  "mixed",
] as const;
export type PatternName = (typeof PATTERN_NAMES)[number];

export interface Pattern {
  pattern: PatternName;
  suggestedAction: string;
}

/** A row of the table: the pattern, when it holds (in words, as README says), the rule. */
export interface PatternRule extends Pattern {
  when: string;
  matches(s: DeadLetterShape): boolean;
}

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

/** At least half of the dead letters: the share that names a cause. */
const HALF = 0.5;
/** An outage: at least this many deaths inside one 15-minute window ... */
const OUTAGE_MIN_IN_WINDOW = 5;
/** ... holding at least this share of all of them. */
const OUTAGE_SHARE = 0.6;
/** Spread out: deaths over at least this span ... */
const SPREAD_MIN_SPAN_MS = 3 * HOUR;
/** ... in at least this many distinct hours ... */
const SPREAD_MIN_HOURS = 3;
/** ... with no 15-minute window holding more than this share. */
const SPREAD_MAX_SHARE = 0.25;

const share = (n: number | undefined, s: DeadLetterShape) => (n ?? 0) / s.count;

export const PATTERNS: ReadonlyArray<PatternRule> = [
  {
    pattern: "missing_field",
    when: "at least half died for lack of a field the URL template needs (error kind `missing_field`: nothing was sent)",
    matches: (s) => share(s.missingField, s) >= HALF,
    suggestedAction:
      "The messages lack fields the endpoint's URL template needs, so nothing was sent (the attempt's error names the placeholder): have the producer send them, or set missingFields to \"empty\" if the tracker accepts empty values, then requeue.",
  },
  {
    pattern: "body_rule",
    when: "at least half were 2xx answers whose body broke the endpoint's success rule (error kind `body_rule`)",
    matches: (s) => share(s.bodyRule, s) >= HALF,
    suggestedAction:
      "The receiver answered 2xx with a refusal in the body (the endpoint's successRule): read the stored responses (a duplicate, an unknown click id, a bad token), fix the cause, then requeue the ones worth sending again.",
  },
  {
    pattern: "proxy",
    when: "at least half died on the egress proxy (error kind `proxy`: the endpoint was never reached)",
    matches: (s) => share(s.proxy, s) >= HALF,
    suggestedAction:
      "The egress proxy was down or refused the tunnel (its credentials, its rules), so the endpoint was never reached: fix the proxy, the endpoint's proxyUrl or the pool in HOOKRELAY_EGRESS_POOLS (docs/egress.md), then requeue.",
  },
  {
    pattern: "tls",
    when: "at least half failed the TLS handshake (error kind `tls`)",
    matches: (s) => share(s.tls, s) >= HALF,
    suggestedAction:
      "The TLS handshake failed (the attempts' errors say why: the receiver's certificate expired, names another host or comes from a CA hookrelay does not trust; or the receiver refused our client certificate): fix the certificate, or set the endpoint's tlsCa, tlsClientCert and tlsClientKey (docs/egress.md), then requeue.",
  },
  {
    pattern: "gone",
    when: "the newest death, or at least half, answered 410 Gone",
    matches: (s) => s.lastGone === true || share(s.gone, s) >= HALF,
    suggestedAction:
      "The receiver answered 410 Gone: it wants no more messages at this URL, and hookrelay disabled the endpoint. If the receiver moved, point the endpoint at its new URL and enable it; if it is gone for good, delete the endpoint. Requeue the dead letters only if they are still wanted.",
  },
  {
    pattern: "credentials",
    when: "at least half answered 401 or 403",
    matches: (s) => share(s.credentials, s) >= HALF,
    suggestedAction:
      "The receiver rejects hookrelay's credentials (401/403): fix the key or token in the endpoint's headers or URL, then requeue the endpoint's dead letters.",
  },
  {
    pattern: "rate_limited",
    when: "at least half answered 429",
    matches: (s) => share(s.rateLimited, s) >= HALF,
    suggestedAction:
      "The receiver is rate limiting (429): set ratePerSecond/ratePerMinute on the endpoint below its limit, then requeue; requeued deliveries are released at that pace.",
  },
  {
    pattern: "timeouts",
    when: "at least half timed out (error kind `timeout`)",
    matches: (s) => share(s.timeouts, s) >= HALF,
    suggestedAction:
      "The receiver did not answer within the endpoint's timeout: have it answer 2xx at once and do the work afterwards, or raise the endpoint's timeoutMs, then requeue.",
  },
  {
    pattern: "outage",
    when: "a burst: at least 5 died inside one 15-minute window, and that window holds at least 60% of them",
    matches: (s) =>
      s.maxIn15Minutes >= OUTAGE_MIN_IN_WINDOW && s.maxIn15Minutes / s.count >= OUTAGE_SHARE,
    suggestedAction:
      "Most deaths fall in one short span: the endpoint was down. Confirm it is back up, then requeue the endpoint's dead letters.",
  },
  {
    pattern: "intermittent",
    when: "a steady share, spread out: deaths over at least 3 hours, in at least 3 distinct hours, no 15-minute window holding more than a quarter of them",
    matches: (s) =>
      s.lastAt.getTime() - s.firstAt.getTime() >= SPREAD_MIN_SPAN_MS &&
      s.distinctHours >= SPREAD_MIN_HOURS &&
      s.maxIn15Minutes / s.count <= SPREAD_MAX_SHARE,
    suggestedAction:
      "A few deaths at a time, spread out: the receiver fails a share of requests all along, or refuses specific payloads. Read the attempts' responses, fix the receiver (or raise maxAttempts if its failures pass), then requeue.",
  },
];

/** The verdict when no row of the table holds (and for an endpoint with no dead letters). */
export const MIXED: PatternRule = {
  pattern: "mixed",
  when: "none of the above",
  matches: () => true,
  suggestedAction:
    "No single cause stands out: look at the most common error and status code, and at the attempts' responses.",
};

export function detectPattern(shape: DeadLetterShape): Pattern {
  const hit = shape.count === 0 ? MIXED : (PATTERNS.find((p) => p.matches(shape)) ?? MIXED);
  return { pattern: hit.pattern, suggestedAction: hit.suggestedAction };
}
