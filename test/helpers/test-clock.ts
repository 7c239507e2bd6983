/**
 * A clock for a worker's statements (src/db/sql/clock.ts) that tests move forward instead
 * of sleeping: the host's time plus an offset. Monotonic, and never behind the database's
 * now() (same host clock), so rows the API stamps with now() are due as usual.
 */
import type { SqlClock } from "../../src/db/sql/clock.ts";

export interface TestClock {
  /** what the worker's statements take as now */
  readonly sql: SqlClock;
  /** Moves the clock `ms` forward: the waits it covers are over. */
  advance(ms: number): void;
}

export function makeTestClock(): TestClock {
  let offsetMs = 0;
  return {
    // one millisecond ahead: a Date has whole milliseconds, the database microseconds, so a
    // row stamped within the current millisecond is not in the clock's future
    sql: () => new Date(Date.now() + offsetMs + 1),
    advance(ms) {
      offsetMs += ms;
    },
  };
}
