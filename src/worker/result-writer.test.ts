/**
 * The result writer's count of successful answers not written yet, which the next claim
 * counts as free room (docs/delivery.md, "Room freed by answers not yet written"): per
 * endpoint with their claims' tokens, the write under way apart with a witness row; no
 * failure nor probe, and nothing of a write that failed (it may have committed all the same).
 */
import { expect, test } from "vitest";
import { successResult } from "../../test/helpers/delivery-result.ts";
import { keptLogger, settled } from "../../test/helpers/worker-fakes.ts";
import { loadConfig } from "../config.ts";
import type { Pool } from "../db/pool.ts";
import type { Logger } from "../logger.ts";
import { makeResultWriter } from "./result-writer.ts";

const A = "00000000-0000-0000-0000-00000000000a";
const B = "00000000-0000-0000-0000-00000000000b";

/** A pool whose statements wait until the test answers them (the oldest first). */
function heldPool() {
  const answers: ((err?: Error) => void)[] = [];
  const pool = {
    query: () =>
      new Promise((resolve, reject) =>
        answers.push((err) => (err ? reject(err) : resolve({ rows: [{ changed: 1 }] }))),
      ),
  };
  return {
    pool: pool as unknown as Pool,
    get open() {
      return answers.length;
    },
    answer(err?: Error) {
      answers.shift()!(err);
    },
  };
}

function writerOver(held: ReturnType<typeof heldPool>, retryMs = 1) {
  return makeResultWriter({
    pool: held.pool,
    logger: keptLogger() as unknown as Logger,
    flushBatch: 3,
    // an hour: only a full batch or flush() writes
    flushIntervalMs: 3_600_000,
    health: loadConfig({}).health,
    retry: { baseMs: retryMs, capMs: retryMs },
  });
}

test("answered rows not written yet are counted per endpoint, the write under way apart with its witness, with their claims", async () => {
  const held = heldPool();
  const writer = writerOver(held);
  expect(writer.unwritten()).toEqual({
    endpointIds: [],
    counts: [],
    inWrite: [],
    claimTokens: [],
    witness: null,
  });
  writer.add(successResult({ deliveryId: 1, messageMs: 11, endpointId: "ep_1", claimToken: A }));
  writer.add(successResult({ deliveryId: 2, endpointId: "ep_1", claimToken: A }));
  expect(writer.unwritten()).toEqual({
    endpointIds: ["ep_1"],
    counts: [2],
    inWrite: [false],
    claimTokens: [A],
    witness: null,
  });
  // the third fills the batch: the write takes all three, and is under way
  writer.add(successResult({ deliveryId: 3, endpointId: "ep_2", claimToken: B }));
  await settled();
  expect(held.open).toBe(1);
  writer.add(successResult({ deliveryId: 4, endpointId: "ep_2", claimToken: B }));
  expect(writer.unwritten()).toEqual({
    endpointIds: ["ep_2", "ep_1", "ep_2"],
    counts: [1, 2, 1],
    inWrite: [false, true, true],
    claimTokens: [B, A],
    witness: { deliveryId: 1, messageMs: 11, claimToken: A },
  });
  held.answer();
  await settled();
  // written: its rows are released in the database and no longer counted here; the one
  // that waited went out in the next write at once
  expect(writer.unwritten()).toEqual({
    endpointIds: ["ep_2"],
    counts: [1],
    inWrite: [true],
    claimTokens: [B],
    witness: { deliveryId: 4, messageMs: 0, claimToken: B },
  });
  held.answer();
  await writer.flush();
  expect(writer.unwritten().counts).toEqual([]);
});

test("results back from a failed write are not counted: it may have committed before its answer was lost", async () => {
  const held = heldPool();
  // the retry waits 500 ms: the failed results stay queued while the test looks at them
  const writer = writerOver(held, 500);
  for (const id of [1, 2, 3]) writer.add(successResult({ deliveryId: id, claimToken: A }));
  await settled();
  held.answer(new Error("Connection terminated unexpectedly"));
  await settled();
  // back in the queue for the retry, left out of the count
  expect(writer.waiting).toBe(3);
  expect(writer.unwritten().counts).toEqual([]);
  writer.add(successResult({ deliveryId: 4, endpointId: "ep_9", claimToken: B }));
  expect(writer.unwritten()).toMatchObject({
    endpointIds: ["ep_9"],
    counts: [1],
    inWrite: [false],
  });
  const flushed = writer.flush();
  while (held.open === 0) await settled();
  held.answer();
  await flushed;
  expect(writer.waiting).toBe(0);
});

test("failures and probes are not counted: their effects on the endpoint come with their write", async () => {
  const held = heldPool();
  const writer = writerOver(held);
  writer.add(
    successResult({
      deliveryId: 1,
      claimToken: A,
      success: false,
      statusCode: 429,
      errorKind: "rate_limited",
      pauseMs: 2_000,
    }),
  );
  writer.add(successResult({ deliveryId: 2, claimToken: A, isProbe: true }));
  expect(writer.unwritten().counts).toEqual([]);
  writer.add(successResult({ deliveryId: 3, claimToken: A }));
  expect(writer.unwritten()).toMatchObject({ claimTokens: [A], counts: [1] });
  const flushed = writer.flush();
  await settled();
  held.answer();
  await flushed;
});
