import { describe, expect, test } from "vitest";
import { type CircuitAttempt, summarizeOutcomes } from "./circuit-summary.ts";

const at = (ms: number) => new Date(Date.UTC(2025, 0, 1) + ms);

function attempt(
  endpointId: string,
  ms: number,
  success: boolean,
  extra: Partial<CircuitAttempt> = {},
): CircuitAttempt {
  return { endpointId, success, startedAt: at(ms), pauseMs: null, ...extra };
}

describe("summarizeOutcomes", () => {
  test("an empty batch has no outcomes", () => {
    expect(summarizeOutcomes([])).toEqual([]);
  });

  test("one outcome per endpoint, in endpoint id order (the lock order)", () => {
    const out = summarizeOutcomes([
      attempt("ep_c", 1, true),
      attempt("ep_a", 2, true),
      attempt("ep_b", 3, false),
      attempt("ep_a", 4, false),
    ]);
    expect(out.map((o) => o.endpointId)).toEqual(["ep_a", "ep_b", "ep_c"]);
  });

  test("trailing failures count the failures after the last success, by start time, not batch order", () => {
    const [o] = summarizeOutcomes([
      attempt("ep", 50, false),
      attempt("ep", 10, false),
      attempt("ep", 30, true),
      attempt("ep", 40, false),
      attempt("ep", 20, false),
    ]);
    expect(o).toMatchObject({
      anyOk: true,
      trailingFailures: 2, // 40 and 50; 10 and 20 came before the success at 30
      lastOkAt: at(30),
      lastFailAt: at(50),
    });
  });

  test("without a success every failure is trailing; without a failure there is none", () => {
    const [fail] = summarizeOutcomes([
      attempt("ep", 1, false),
      attempt("ep", 2, false),
      attempt("ep", 3, false),
    ]);
    expect(fail).toMatchObject({
      anyOk: false,
      trailingFailures: 3,
      lastOkAt: null,
      lastFailAt: at(3),
    });
    const [ok] = summarizeOutcomes([attempt("ep", 1, true), attempt("ep", 2, true)]);
    expect(ok).toMatchObject({
      anyOk: true,
      trailingFailures: 0,
      lastOkAt: at(2),
      lastFailAt: null,
    });
  });

  test("a success last in time resets the count even if it is first in the batch", () => {
    const [o] = summarizeOutcomes([
      attempt("ep", 9, true),
      attempt("ep", 1, false),
      attempt("ep", 2, false),
    ]);
    expect(o).toMatchObject({ anyOk: true, trailingFailures: 0 });
  });

  test("the longest Retry-After pause of the batch wins; none means null", () => {
    const [o] = summarizeOutcomes([
      attempt("ep", 1, false, { pauseMs: 2_000 }),
      attempt("ep", 2, false, { pauseMs: 500 }),
      attempt("ep", 3, true),
    ]);
    expect(o!.pauseMs).toBe(2_000);
    expect(summarizeOutcomes([attempt("ep", 1, false)])[0]!.pauseMs).toBeNull();
    expect(summarizeOutcomes([attempt("ep", 1, false, { pauseMs: 0 })])[0]!.pauseMs).toBe(0);
  });

  test("endpoints do not mix", () => {
    const out = summarizeOutcomes([
      attempt("ep_a", 1, false),
      attempt("ep_b", 2, true),
      attempt("ep_a", 3, false),
      attempt("ep_b", 4, false, { pauseMs: 1_000 }),
    ]);
    expect(out).toEqual([
      {
        endpointId: "ep_a",
        anyOk: false,
        trailingFailures: 2,
        lastOkAt: null,
        lastFailAt: at(3),
        pauseMs: null,
        okCount: 0,
      },
      {
        endpointId: "ep_b",
        anyOk: true,
        trailingFailures: 1,
        lastOkAt: at(2),
        lastFailAt: at(4),
        pauseMs: 1_000,
        okCount: 1,
      },
    ]);
  });

  test("a backpressure answer pauses but is no failure: the count, the last failure and the successes are as without it", () => {
    const [o] = summarizeOutcomes([
      attempt("ep", 1, false),
      attempt("ep", 2, false, { backpressure: true, pauseMs: 3_000 }),
      attempt("ep", 3, false, { backpressure: true, pauseMs: null }),
    ]);
    expect(o).toMatchObject({
      anyOk: false,
      trailingFailures: 1,
      lastFailAt: at(1),
      pauseMs: 3_000,
      okCount: 0,
    });
    const [ok] = summarizeOutcomes([
      attempt("ep", 1, true),
      attempt("ep", 2, false, { backpressure: true, pauseMs: 1_000 }),
      attempt("ep", 3, true),
    ]);
    expect(ok).toMatchObject({ anyOk: true, trailingFailures: 0, okCount: 2, pauseMs: 1_000 });
  });
});
