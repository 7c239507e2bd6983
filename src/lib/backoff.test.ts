import { describe, expect, test } from "vitest";
import { makeBackoff } from "./backoff.ts";

describe("makeBackoff", () => {
  test("doubles up to the cap, each wait between half and all of its ceiling", () => {
    const low = makeBackoff({ baseMs: 100, capMs: 1_000, random: () => 0 });
    const high = makeBackoff({ baseMs: 100, capMs: 1_000, random: () => 0.999_999 });
    const lows = Array.from({ length: 6 }, () => low.next());
    const highs = Array.from({ length: 6 }, () => high.next());
    expect(lows).toEqual([50, 100, 200, 400, 500, 500]);
    expect(highs).toEqual([100, 200, 400, 800, 1_000, 1_000]);
  });

  test("reset starts over; failures counts since the last success", () => {
    const b = makeBackoff({ baseMs: 10, capMs: 1_000, random: () => 0 });
    b.next();
    b.next();
    expect(b.failures).toBe(2);
    b.reset();
    expect(b.failures).toBe(0);
    expect(b.next()).toBe(5);
  });

  test("stays finite after very many failures", () => {
    const b = makeBackoff({ baseMs: 100, capMs: 5_000, random: () => 0.5 });
    let last = 0;
    for (let i = 0; i < 2_000; i++) last = b.next();
    expect(last).toBe(3_750);
  });
});
