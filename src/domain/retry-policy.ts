/**
 * When to try again (docs/delivery.md, Retries and What is retried): what an attempt's
 * outcome means for its delivery (`Verdict`), why it failed (`ErrorKind`), the policy's
 * numbers (`RetryPolicy`) and `retryDelayMs`, the one function that computes a delay. Which
 * HTTP status means what is the HTTP sender's (delivery/http-status.ts).
 */

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
  /** the message's payload was expunged (docs/delivery.md, Expunged messages): nothing is sent */
  expunged: "expunged",
  /**
   * a backpressure answer: 429, or 503 with a usable Retry-After (docs/delivery.md,
   * Backpressure); the endpoint pauses, the circuit does not count it
   */
  rateLimited: "rate_limited",
  // egress (docs/egress.md)
  /**
   * the egress proxy could not be reached or refused the tunnel: retried, and the circuit
   * does not count it (the endpoint was never reached)
   */
  proxy: "proxy",
  /** the TLS handshake with the receiver failed (its certificate, or ours for mTLS) */
  tls: "tls",
  /**
   * no OAuth2 token (docs/oauth2.md): the token endpoint could not be reached, did not answer
   * in time, answered without a token or refused the credentials; nothing was sent to the
   * receiver. Retried, and the circuit counts it (the token endpoint is the receiver's).
   */
  oauth: "oauth",
  // broker destinations (docs/destinations.md)
  /**
   * the broker did not take the message: a nack, an unroutable publish (no queue bound), an
   * exchange that does not exist, no stream for the subject
   */
  brokerRefused: "broker_refused",
} as const;
export type ErrorKind = (typeof ErrorKind)[keyof typeof ErrorKind];

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
