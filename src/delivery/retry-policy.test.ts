import { describe, expect, test } from "vitest";
import { classifyStatus, parseRetryAfter, retryDelayMs } from "./retry-policy.ts";

describe("retry policy", () => {
  const policy = { maxAttempts: 5, baseMs: 30_000, capMs: 3_600_000 };

  test("full jitter stays within [0, min(cap, base * 2^n))", () => {
    expect(retryDelayMs(policy, 1, null, () => 0)).toBe(0);
    expect(retryDelayMs(policy, 1, null, () => 0.999_999)).toBe(59_999);
    expect(retryDelayMs(policy, 3, null, () => 0.5)).toBe(120_000);
    // 30 s * 2^10 is far above the cap
    expect(retryDelayMs(policy, 10, null, () => 0.999_999)).toBe(3_599_996);
    for (let n = 1; n <= 12; n++) {
      const d = retryDelayMs(policy, n);
      expect(d).toBeGreaterThanOrEqual(0);
      expect(d).toBeLessThan(Math.min(policy.capMs, policy.baseMs * 2 ** n));
    }
  });

  test("Retry-After replaces the delay, clamped to the cap", () => {
    expect(retryDelayMs(policy, 1, 2_000)).toBe(2_000);
    expect(retryDelayMs(policy, 1, 10 * 3_600_000)).toBe(3_600_000);
    expect(parseRetryAfter("2")).toBe(2_000);
    expect(
      parseRetryAfter("Wed, 21 Oct 2015 07:28:10 GMT", Date.parse("Wed, 21 Oct 2015 07:28:00 GMT")),
    ).toBe(10_000);
    expect(parseRetryAfter("soon")).toBeNull();
    expect(parseRetryAfter(undefined)).toBeNull();
  });

  test("status classification follows docs/delivery.md, What is retried", () => {
    const verdict = (s: number) => classifyStatus(s).verdict;
    for (const s of [200, 201, 204, 299]) expect(verdict(s)).toBe("success");
    for (const s of [408, 425, 429, 500, 502, 503, 504, 599]) expect(verdict(s)).toBe("transient");
    for (const s of [301, 302, 307, 308, 400, 401, 403, 404, 410, 422])
      expect(verdict(s)).toBe("permanent");
    expect(classifyStatus(401).errorKind).toBe("credentials");
    expect(classifyStatus(403).errorKind).toBe("credentials");
    expect(classifyStatus(410).errorKind).toBe("gone");
    expect(classifyStatus(302).errorKind).toBe("redirect");
  });
});
