import { describe, expect, test } from "vitest";
import { retryDelayMs } from "./retry-policy.ts";

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
  });
});
