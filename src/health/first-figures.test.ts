/**
 * awaitsFirstFigures (latency-stats.ts): which listed rows get figures computed now. The
 * listing's own behaviour is test/endpoint-list-first-figures.test.ts's.
 */
import { describe, expect, test } from "vitest";
import { awaitsFirstFigures, type StoredFigures } from "./latency-stats.ts";

const at = (s: number) => new Date(Date.UTC(2026, 11, 8, 0, 0, s));
const row = (o: Partial<StoredFigures>): StoredFigures => ({
  id: "ep_1",
  p50_ms: null,
  p95_ms: null,
  p99_ms: null,
  samples: 0,
  success_rate: null,
  stats_at: null,
  last_success_at: null,
  last_failure_at: null,
  ...o,
});

describe("awaitsFirstFigures", () => {
  test("a row that answered and has no stored figures yet, or none since its answers", () => {
    expect(awaitsFirstFigures(row({ last_failure_at: at(5) }))).toBe(true);
    expect(awaitsFirstFigures(row({ stats_at: at(1), last_success_at: at(5) }))).toBe(true);
    expect(
      awaitsFirstFigures(row({ stats_at: at(9), last_success_at: at(1), last_failure_at: at(10) })),
    ).toBe(true);
  });

  test("not a row with stored samples, one that never answered, or one quiet since its refresh", () => {
    expect(awaitsFirstFigures(row({ samples: 3, stats_at: at(1), last_success_at: at(5) }))).toBe(
      false,
    );
    expect(awaitsFirstFigures(row({ stats_at: at(1) }))).toBe(false);
    // its samples aged out of the window: the refresh after its last answer stored none
    expect(awaitsFirstFigures(row({ stats_at: at(9), last_success_at: at(5) }))).toBe(false);
  });
});
