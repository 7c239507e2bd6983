import { expect, test } from "vitest";
import { keptLogger, settled } from "../../test/helpers/worker-fakes.ts";
import { type ClaimLoopOptions, makeClaimLoop } from "./claim-loop.ts";

/** A claimer the test answers: each claim waits until the test says how many rows it took. */
function fakeClaimer() {
  const asked: number[] = [];
  const answers: ((taken: number | Error) => void)[] = [];
  return {
    asked,
    claim(limit: number) {
      asked.push(limit);
      return new Promise<number>((resolve, reject) =>
        answers.push((taken) => (taken instanceof Error ? reject(taken) : resolve(taken))),
      );
    },
    /** answers the oldest open claim */
    answer(taken: number | Error) {
      answers.shift()!(taken);
    },
  };
}

/** Waits (a few timer turns at a time) until `done()` holds. */
async function until(done: () => boolean): Promise<void> {
  while (!done()) await new Promise((r) => setTimeout(r, 1));
}

function loopWith(claimer: ReturnType<typeof fakeClaimer>, extra: Partial<ClaimLoopOptions> = {}) {
  const lost: boolean[] = [];
  const logger = keptLogger();
  let inFlight = 0;
  const loop = makeClaimLoop({
    // an hour: a test that passed only by a poll would hang, not pass
    pollIntervalMs: 3_600_000,
    concurrency: 100,
    claimBatch: 40,
    inFlight: () => inFlight,
    claim: (limit) => claimer.claim(limit),
    releaseLost: async (checkOwners) => void lost.push(checkOwners),
    logger,
    ...extra,
  });
  return {
    loop,
    lost,
    logger,
    setInFlight: (n: number) => {
      inFlight = n;
    },
  };
}

test("a full claim claims again at once; a short one sleeps until woken", async () => {
  const claimer = fakeClaimer();
  const { loop, lost } = loopWith(claimer);
  loop.start();
  await settled();
  expect(lost).toEqual([true]); // lost claims are handed back first; no lock: every owner judged
  expect(claimer.asked).toEqual([40]);
  claimer.answer(40);
  await settled();
  expect(claimer.asked).toEqual([40, 40]);
  claimer.answer(3);
  await settled();
  expect(claimer.asked).toHaveLength(2);
  loop.wake();
  await settled();
  expect(claimer.asked).toHaveLength(3);
  claimer.answer(0);
  await loop.stop();
});

test("after a short claim, a batch of answers since it began claims again: their room is free before their results are written", async () => {
  const claimer = fakeClaimer();
  const { loop } = loopWith(claimer);
  loop.start();
  await settled();
  expect(claimer.asked).toEqual([40]);
  // answers while the claim runs count toward the next one
  for (let i = 0; i < 5; i++) loop.slotFreed();
  claimer.answer(12); // short: the endpoints' room ran out
  await settled();
  expect(claimer.asked).toHaveLength(1);
  // claimBatch 40: the 40th answer since the claim began wakes the loop, not the 39th
  for (let i = 0; i < 34; i++) loop.slotFreed();
  await settled();
  expect(claimer.asked).toHaveLength(1);
  loop.slotFreed();
  await settled();
  expect(claimer.asked).toEqual([40, 40]);
  claimer.answer(0);
  await loop.stop();
});

test("claims only for free slots, and waits for a quarter of them to be free", async () => {
  const claimer = fakeClaimer();
  const { loop, setInFlight } = loopWith(claimer);
  setInFlight(90);
  loop.start();
  await settled();
  // 10 free, fewer than min(claimBatch, concurrency / 4) = 25: not worth a claim
  expect(claimer.asked).toEqual([]);
  setInFlight(70);
  loop.wake();
  await settled();
  expect(claimer.asked).toEqual([30]);
  setInFlight(100); // the pipeline has them
  claimer.answer(30);
  await settled();
  expect(claimer.asked).toEqual([30]);
  // a full claim: the next waits for a slot (slotFreed), not for a poll
  setInFlight(60);
  loop.slotFreed();
  await settled();
  expect(claimer.asked).toEqual([30, 40]);
  claimer.answer(0);
  await loop.stop();
});

test("while the liveness lock is not held nothing is claimed; others are judged only once it has been held long enough", async () => {
  const claimer = fakeClaimer();
  const lock = { held: false, judging: false };
  const { loop, lost } = loopWith(claimer, {
    pollIntervalMs: 0,
    liveness: {
      get held() {
        return lock.held;
      },
      judges: () => lock.judging,
    },
  });
  loop.start();
  await settled();
  expect(claimer.asked).toEqual([]);
  expect(lost.length).toBeGreaterThan(0);
  expect(lost.every((judged) => judged === false)).toBe(true);
  lock.held = true;
  lock.judging = true;
  await until(() => claimer.asked.length > 0);
  expect(claimer.asked).toEqual([40]);
  expect(lost.at(-1)).toBe(true);
  claimer.answer(0);
  await loop.stop();
});

test("a failed claim waits its backoff, which NOTIFY does not cut short but stop() does", async () => {
  const claimer = fakeClaimer();
  const { loop, logger } = loopWith(claimer, { backoff: { baseMs: 3_600_000, capMs: 3_600_000 } });
  loop.start();
  await settled();
  claimer.answer(new Error("syntax error"));
  await settled();
  expect(logger.lines.map((l) => [l.level, l.msg])).toEqual([["error", "claim failed"]]);
  loop.wake();
  await settled();
  expect(claimer.asked).toHaveLength(1);
  await loop.stop();
  expect(claimer.asked).toHaveLength(1);
});
