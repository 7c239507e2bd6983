/**
 * The per-key token bucket on a clock the test moves: the burst, the refusal with its
 * Retry-After, and recovery once that many seconds have passed (test/api-keys.test.ts
 * checks the 429 through the API).
 */
import { expect, test } from "vitest";
import { ApiError } from "../errors.ts";
import { makeKeyRateLimiter } from "./key-rate-limit.ts";

/** The limiter's answer to one request of `key`: 200, or the 429's Retry-After seconds. */
function ask(limiter: ReturnType<typeof makeKeyRateLimiter>, key: string): number | "ok" {
  try {
    limiter.take(key);
    return "ok";
  } catch (err) {
    expect(err).toBeInstanceOf(ApiError);
    const e = err as ApiError;
    expect([e.status, e.code]).toEqual([429, "rate_limited"]);
    return Number(e.headers["retry-after"]);
  }
}

test("5/s: a burst of 10, then 429 with Retry-After; after that many seconds the key gets through again", () => {
  let now = 1_000_000;
  const limiter = makeKeyRateLimiter(5, () => now);
  const burst = Array.from({ length: 12 }, () => ask(limiter, "noisy"));
  expect(burst.slice(0, 10)).toEqual(Array(10).fill("ok"));
  const retryAfter = burst[10] as number;
  expect(retryAfter).toBe(1);
  expect(burst[11]).toBe(1);
  // another key has its own bucket
  expect(ask(limiter, "quiet")).toBe("ok");
  // before a token has come back (1/5 s): still refused
  now += 199;
  expect(ask(limiter, "noisy")).toBe(1);
  // once Retry-After has passed (a whole second: at least one token)
  now += retryAfter * 1000 - 199;
  expect(ask(limiter, "noisy")).toBe("ok");
});

test("the bucket refills at the rate, up to the burst, and 0 turns the limit off", () => {
  let now = 0;
  const limiter = makeKeyRateLimiter(2, () => now);
  for (let i = 0; i < 4; i++) expect(ask(limiter, "k")).toBe("ok");
  expect(ask(limiter, "k")).toBe(1);
  now += 500; // one token
  expect(ask(limiter, "k")).toBe("ok");
  expect(ask(limiter, "k")).toBe(1);
  now += 60_000; // a long quiet spell refills only up to the burst
  for (let i = 0; i < 4; i++) expect(ask(limiter, "k")).toBe("ok");
  expect(ask(limiter, "k")).toBe(1);

  const off = makeKeyRateLimiter(0, () => now);
  for (let i = 0; i < 100; i++) expect(ask(off, "k")).toBe("ok");
});
