/**
 * When to try again (docs/delivery.md, Retries and What is retried). The classification table and the defaults are data;
 * `retryDelayMs` is the one function that computes a delay. A receiver's Retry-After is read
 * by retry-after.ts (re-exported here for the sender).
 */
export { parseRetryAfter } from "./retry-after.ts";

/** What an attempt's outcome means for its delivery. */
export const Verdict = {
  /** 2xx: delivered. */
  success: "success",
  /** Worth another attempt later (network trouble, timeouts, 408/425/429/5xx). */
  transient: "transient",
  /** Never worth retrying: dead-letter now. */
  permanent: "permanent",
} as const;
export type Verdict = (typeof Verdict)[keyof typeof Verdict];

/** Why an attempt failed, stored in attempts.error_kind and deliveries.last_error_kind. */
export const ErrorKind = {
  connection: "connection",
  dns: "dns",
  timeout: "timeout",
  http: "http",
  redirect: "redirect",
  credentials: "credentials",
  gone: "gone",
  ssrfBlocked: "ssrf_blocked",
  invalidRequest: "invalid_request",
  /** the endpoint's signing secret could not be opened (encryption key missing): nothing was sent */
  signing: "signing",
  // postback endpoints (README.md, Postbacks)
  /** the payload lacks a field the endpoint's URL template needs: nothing was sent */
  missingField: "missing_field",
  /** a 2xx whose body broke the endpoint's success rule */
  bodyRule: "body_rule",
} as const;
export type ErrorKind = (typeof ErrorKind)[keyof typeof ErrorKind];

/** HTTP statuses outside 2xx/5xx that are still transient. */
const TRANSIENT_STATUSES: ReadonlySet<number> = new Set([408, 425, 429]);
/** Statuses whose Retry-After header sets the delay. */
export const RETRY_AFTER_STATUSES: ReadonlySet<number> = new Set([429, 503]);

export interface StatusClass {
  readonly verdict: Verdict;
  readonly errorKind: ErrorKind | null;
}

// (shared answers: one is asked for on every attempt)
const SUCCESS: StatusClass = { verdict: Verdict.success, errorKind: null };
const TRANSIENT_HTTP: StatusClass = { verdict: Verdict.transient, errorKind: ErrorKind.http };
const REDIRECT: StatusClass = { verdict: Verdict.permanent, errorKind: ErrorKind.redirect };
const CREDENTIALS: StatusClass = { verdict: Verdict.permanent, errorKind: ErrorKind.credentials };
const GONE: StatusClass = { verdict: Verdict.permanent, errorKind: ErrorKind.gone };
const PERMANENT_HTTP: StatusClass = { verdict: Verdict.permanent, errorKind: ErrorKind.http };

/** Classifies an HTTP status. Redirects are never followed, so 3xx is permanent. */
export function classifyStatus(status: number): StatusClass {
  if (status >= 200 && status < 300) return SUCCESS;
  if (status >= 500 || TRANSIENT_STATUSES.has(status)) return TRANSIENT_HTTP;
  if (status >= 300 && status < 400) return REDIRECT;
  if (status === 401 || status === 403) return CREDENTIALS;
  if (status === 410) return GONE;
  return PERMANENT_HTTP;
}

export interface RetryPolicy {
  /** maxAttempts: attempts per delivery before dead-lettering. */
  maxAttempts: number;
  /** baseMs: full-jitter base. */
  baseMs: number;
  /** capMs: ceiling of every delay, Retry-After included. */
  capMs: number;
}

/**
 * Delay before the next attempt after failed attempt `attempt` (1-based): full jitter,
 * random(0, min(cap, base * 2^attempt)). A Retry-After value replaces it, clamped to the cap.
 */
export function retryDelayMs(
  policy: RetryPolicy,
  attempt: number,
  retryAfterMs: number | null = null,
  random: () => number = Math.random,
): number {
  if (retryAfterMs !== null) return Math.min(policy.capMs, Math.max(0, retryAfterMs));
  const ceiling = Math.min(policy.capMs, policy.baseMs * 2 ** attempt);
  return Math.floor(random() * ceiling);
}
