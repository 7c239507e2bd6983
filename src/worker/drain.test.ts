import { expect, test } from "vitest";
import { keptLogger } from "../../test/helpers/worker-fakes.ts";
import { type DrainSteps, drain } from "./drain.ts";

/** Drain steps that write down what happened, in order. */
function stepsWith(extra: { inFlight?: () => number; flush?: () => Promise<void> } = {}) {
  const done: string[] = [];
  const logger = keptLogger();
  let abandoned: { deliveryId: number; claimToken: string }[] = [];
  const steps: DrainSteps = {
    stopClaims: async () => void done.push("stop claims"),
    pipeline: {
      get inFlight() {
        return extra.inFlight?.() ?? 0;
      },
      abandon() {
        done.push("abandon");
        return abandoned;
      },
      clear: () => void done.push("clear"),
    },
    writer: {
      flush: extra.flush ?? (async () => void done.push("flush")),
      waiting: 3,
    },
    release: async (rows) => {
      done.push(`release ${rows.map((r) => r.deliveryId).join(",")}`);
      return rows.length;
    },
    shutdownTimeoutMs: 3_600_000,
    logger,
    checkEveryMs: 1,
  };
  return {
    steps,
    done,
    logger,
    abandonRows: (rows: typeof abandoned) => {
      abandoned = rows;
    },
  };
}

test("waits for the requests in flight, writes their results, releases nothing", async () => {
  let left = 3;
  const { steps, done, logger } = stepsWith({ inFlight: () => left-- });
  await drain(steps);
  expect(left).toBeLessThan(0);
  expect(done).toEqual(["stop claims", "abandon", "flush", "clear"]);
  expect(logger.lines).toEqual([]);
});

test("at the drain deadline the requests still running are abandoned and their rows released", async () => {
  const { steps, done, logger, abandonRows } = stepsWith({ inFlight: () => 2 });
  abandonRows([
    { deliveryId: 4, claimToken: "a" },
    { deliveryId: 5, claimToken: "a" },
  ]);
  await drain({ ...steps, shutdownTimeoutMs: 0 });
  expect(done).toEqual(["stop claims", "abandon", "flush", "release 4,5", "clear"]);
  expect(logger.lines.map((l) => [l.level, l.obj])).toEqual([["warn", { released: 2 }]]);
});

test("results that cannot be written are given up after the grace period; rows stay leased", async () => {
  const { steps, done, logger, abandonRows } = stepsWith({ flush: () => new Promise(() => {}) });
  abandonRows([{ deliveryId: 4, claimToken: "a" }]);
  await drain({ ...steps, shutdownTimeoutMs: 0, flushGraceMs: 1 });
  expect(done).toEqual(["stop claims", "abandon"]);
  expect(logger.lines.map((l) => [l.level, l.obj])).toEqual([["error", { waiting: 3 }]]);
});
