/**
 * The order test files start in (test/helpers/longest-first-sequencer.ts): the files of
 * typical-durations.ts first, longest first, then the others by their last duration on
 * this machine, then by size; and every file named in typical-durations.ts exists.
 */
import { existsSync } from "node:fs";
import path from "node:path";
import { expect, test } from "vitest";
import { longestFirst, type RunCache } from "./helpers/longest-first-sequencer.ts";
import { TYPICAL_SECONDS } from "./helpers/typical-durations.ts";

const ROOT = path.resolve(import.meta.dirname, "..");

/** A cache of earlier runs holding `durations` (ms) and `sizes` (bytes) by path. */
function cacheOf(durations: Record<string, number>, sizes: Record<string, number>): RunCache {
  const known =
    <T>(table: Record<string, number>, wrap: (n: number) => T) =>
    (key: string) =>
      table[key] === undefined ? undefined : wrap(table[key]);
  return {
    getFileTestResults: known(durations, (duration) => ({ duration })),
    getFileStats: known(sizes, (size) => ({ size })),
  };
}

test("every file named in typical-durations.ts is a test file that exists", () => {
  const names = Object.keys(TYPICAL_SECONDS);
  expect(names.length).toBeGreaterThan(10);
  for (const name of names) {
    expect(name).toMatch(/^test\/.*\.test\.ts$/);
    expect(existsSync(path.join(ROOT, name)), name).toBe(true);
  }
});

test("with no earlier run (as on CI after npm ci), the slow small files start first, not last", () => {
  const files = [
    "test/small-and-fast.test.ts",
    "test/faults-failover.test.ts",
    "test/large-and-fast.test.ts",
    "test/bench-quick.test.ts",
  ];
  const sizes = {
    "test/small-and-fast.test.ts": 900,
    "test/faults-failover.test.ts": 1_700,
    "test/large-and-fast.test.ts": 20_000,
    "test/bench-quick.test.ts": 1_600,
  };
  expect(longestFirst(files, (f) => f, cacheOf({}, sizes))).toEqual([
    "test/bench-quick.test.ts",
    "test/faults-failover.test.ts",
    "test/large-and-fast.test.ts",
    "test/small-and-fast.test.ts",
  ]);
});

test("files not named there go by their last duration, then by size", () => {
  const files = ["test/a.test.ts", "test/b.test.ts", "test/c.test.ts", "test/d.test.ts"];
  const durations = { "test/a.test.ts": 300, "test/c.test.ts": 9_000 };
  const sizes = { "test/a.test.ts": 10, "test/b.test.ts": 500, "test/d.test.ts": 800 };
  expect(longestFirst(files, (f) => f, cacheOf(durations, sizes))).toEqual([
    "test/c.test.ts",
    "test/a.test.ts",
    "test/d.test.ts",
    "test/b.test.ts",
  ]);
  // a named file's figure wins over a shorter last run
  const withNamed = [...files, "test/pooler.test.ts"];
  const ran = { ...durations, "test/pooler.test.ts": 5 };
  expect(longestFirst(withNamed, (f) => f, cacheOf(ran, sizes))[0]).toBe("test/pooler.test.ts");
});
