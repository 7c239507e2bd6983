/**
 * What an HTTP status means for a delivery (docs/delivery.md, What is retried): its verdict
 * and error kind, and which statuses' Retry-After sets the delay. The verdicts and error
 * kinds themselves are domain/retry-policy.ts's.
 */
import { ErrorKind, Verdict } from "../domain/retry-policy.ts";

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
