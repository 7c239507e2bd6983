import { describe, expect, test } from "vitest";
import {
  BACKPRESSURE_GIVE_BACKS,
  givesBack,
  isBackpressure,
  MIN_PAUSE_MS,
  pauseFor,
} from "./backpressure.ts";

describe("isBackpressure", () => {
  test("a 429 is backpressure with or without a Retry-After", () => {
    expect(isBackpressure(429, 3_000)).toBe(true);
    expect(isBackpressure(429, null)).toBe(true);
  });
  test("a 503 only with a usable Retry-After; other statuses never", () => {
    expect(isBackpressure(503, 3_000)).toBe(true);
    expect(isBackpressure(503, 0)).toBe(true);
    expect(isBackpressure(503, null)).toBe(false);
    expect(isBackpressure(500, 3_000)).toBe(false);
    expect(isBackpressure(502, null)).toBe(false);
  });
});

describe("pauseFor", () => {
  test("no usable value: no pause", () => {
    expect(pauseFor(null, 60_000)).toBeNull();
  });
  test("the time asked, within the floor and the cap", () => {
    expect(pauseFor(3_000, 60_000)).toBe(3_000);
    // 0, or a date in the past (read as 0): the floor
    expect(pauseFor(0, 60_000)).toBe(MIN_PAUSE_MS);
    expect(pauseFor(-5_000, 60_000)).toBe(MIN_PAUSE_MS);
    // a huge value (delivery/retry-after.ts already makes it at most a day): the cap
    expect(pauseFor(86_400_000, 60_000)).toBe(60_000);
    // a cap below the floor wins
    expect(pauseFor(3_000, 500)).toBe(500);
  });
});

test("givesBack: until BACKPRESSURE_GIVE_BACKS attempts were given back", () => {
  expect(givesBack(0)).toBe(true);
  expect(givesBack(BACKPRESSURE_GIVE_BACKS - 1)).toBe(true);
  expect(givesBack(BACKPRESSURE_GIVE_BACKS)).toBe(false);
});
