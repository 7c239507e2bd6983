/**
 * A per-key request rate limit (token bucket per API key, per process): beyond it the
 * API answers 429 with Retry-After. It keeps one runaway client from starving the others;
 * with N API processes behind a balancer the effective limit is N times this.
 */
import { apiError } from "./errors.ts";

export interface KeyRateLimiter {
  /** throws a 429 ApiError when the key has no token left */
  take(keyId: string): void;
}

export function makeKeyRateLimiter(
  perSecond: number,
  now: () => number = Date.now,
): KeyRateLimiter {
  const burst = perSecond * 2;
  const buckets = new Map<string, { tokens: number; at: number }>();
  return {
    take(keyId) {
      if (perSecond <= 0) return;
      const t = now();
      let b = buckets.get(keyId);
      if (!b) {
        if (buckets.size > 100_000) buckets.clear();
        b = { tokens: burst, at: t };
        buckets.set(keyId, b);
      }
      b.tokens = Math.min(burst, b.tokens + ((t - b.at) / 1000) * perSecond);
      b.at = t;
      if (b.tokens < 1) {
        const waitS = Math.max(1, Math.ceil((1 - b.tokens) / perSecond));
        throw apiError("rate_limited", `too many requests for this API key; retry in ${waitS} s`, {
          headers: { "retry-after": String(waitS) },
        });
      }
      b.tokens -= 1;
    },
  };
}
