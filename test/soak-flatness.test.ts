/**
 * Scenario 20's verdicts (bench/lib/flat.ts): a sawtooth whose peaks follow a filling
 * period is flat; a climb is not; and autovacuum is judged by the dead tuples it left past
 * its trigger, not by the peaks, which rise with the period's size by design.
 */
import { describe, expect, test } from "vitest";
import { flatness } from "../bench/lib/flat.ts";

interface Sample {
  deliveredPerSecond: number;
  workerRssMiB: number;
  deadTuples: number;
  deadPastTrigger: number;
}
const RATE = 100;
const samples = (f: (i: number) => Partial<Sample>, n = 20): Sample[] =>
  Array.from({ length: n }, (_, i) => ({
    deliveredPerSecond: RATE,
    workerRssMiB: 160,
    deadTuples: 1_000,
    deadPastTrigger: 0,
    ...f(i),
  }));
const verdict = (s: Sample[], what: string) => flatness(s, RATE).find((v) => v.what === what)!;

describe("the soak's verdicts", () => {
  test("peaks that rise as the period fills are not flat, yet autovacuum keeps up", () => {
    // the second half's vacuums come at higher counts; a few thousand past the trigger
    // while a table waits its turn, in both halves
    const s = samples((i) => ({
      deadTuples: 40_000 + i * 1_500,
      deadPastTrigger: i % 4 === 0 ? 3_000 : 0,
    }));
    expect(verdict(s, "dead tuples").flat).toBe(false);
    expect(verdict(s, "dead tuples past autovacuum's trigger").flat).toBe(true);
  });

  test("dead tuples piling up past the trigger are autovacuum falling behind", () => {
    const s = samples((i) => ({ deadPastTrigger: i < 10 ? 2_000 : 2_000 + (i - 9) * 5_000 }));
    const v = verdict(s, "dead tuples past autovacuum's trigger");
    expect(v).toMatchObject({ firstHalf: 2_000, secondHalf: 52_000, flat: false });
  });

  test("a worker whose RSS climbs is not flat; one that saws is", () => {
    expect(
      verdict(
        samples((i) => ({ workerRssMiB: 150 + i * 5 })),
        "worker RSS MiB",
      ).flat,
    ).toBe(false);
    expect(
      verdict(
        samples((i) => ({ workerRssMiB: 150 + (i % 5) * 3 })),
        "worker RSS MiB",
      ).flat,
    ).toBe(true);
  });
});
