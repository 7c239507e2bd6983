import { expect, test } from "vitest";
import {
  claimedRow,
  fakeTransport,
  keptLogger,
  notAttemptedPreparation,
  outcomeOf,
  settled,
} from "../../test/helpers/worker-fakes.ts";
import type { ShownTarget } from "../delivery/transport.ts";
import type { AttemptOutcome } from "../domain/attempt-outcome.ts";
import type { ClaimedDelivery } from "../queue/claim-deliveries.ts";
import { makeDeliveryPipeline } from "./delivery-pipeline.ts";
import type { AttemptRecorder } from "./record-attempt.ts";

interface Recorded {
  deliveryId: number;
  token: string;
  outcome: AttemptOutcome;
  finishesClaim: boolean;
  sent: ShownTarget | undefined;
}

function pipelineWith(transport = fakeTransport()) {
  const recorded: Recorded[] = [];
  const recorder: AttemptRecorder = {
    record(claim: ClaimedDelivery, token, outcome, finishesClaim, sent) {
      recorded.push({ deliveryId: claim.id, token, outcome, finishesClaim, sent });
    },
  };
  const logger = keptLogger();
  let settledRows = 0;
  const pipeline = makeDeliveryPipeline({
    transports: { http: transport },
    recorder,
    logger,
    leaseMarginMs: 500,
    onSettled: () => settledRows++,
  });
  return { pipeline, transport, recorded, logger, settledRows: () => settledRows };
}

test("each row is prepared, sent and recorded; the claim's last result ends the claim", async () => {
  const { pipeline, transport, recorded, settledRows } = pipelineWith();
  pipeline.start([claimedRow(1), claimedRow(2)], "tok", 10_000);
  expect(transport.prepared).toEqual([1, 2]);
  expect(pipeline.inFlight).toBe(2);
  expect(pipeline.leaseEndsAt(1)).toBe(10_000 + 1_000 + 500);

  transport.sends[1]!.settle(outcomeOf({ latencyMs: 7 }));
  await settled();
  expect(recorded).toEqual([
    {
      deliveryId: 2,
      token: "tok",
      outcome: outcomeOf({ latencyMs: 7 }),
      finishesClaim: false,
      sent: { shownUrl: "shown 2", secrets: [] },
    },
  ]);
  expect(pipeline.inFlight).toBe(1);
  expect(pipeline.leaseEndsAt(2)).toBeUndefined();

  transport.sends[0]!.settle(outcomeOf());
  await settled();
  expect(recorded.map((r) => [r.deliveryId, r.finishesClaim])).toEqual([
    [2, false],
    [1, true],
  ]);
  expect(pipeline.inFlight).toBe(0);
  expect(settledRows()).toBe(2);
});

test("a row that cannot be prepared is recorded with its immediate outcome, nothing sent", async () => {
  const refused = notAttemptedPreparation("signing", "signing secret could not be opened");
  const { pipeline, transport, recorded, logger } = pipelineWith(
    fakeTransport((id) => (id === 1 ? refused : null)),
  );
  pipeline.start([claimedRow(1)], "tok", 0);
  await settled();
  expect(transport.sends).toHaveLength(0);
  expect(recorded).toEqual([
    {
      deliveryId: 1,
      token: "tok",
      outcome: refused.ok ? null : refused.outcome,
      finishesClaim: true,
      sent: undefined,
    },
  ]);
  // a secret that cannot be opened is the operator's to fix: logged as an error
  expect(logger.lines.map((l) => [l.level, l.msg])).toEqual([
    ["error", "signing secret could not be opened"],
  ]);
  expect(pipeline.inFlight).toBe(0);
});

test("abandon aborts the attempts still running; their results are never recorded", async () => {
  const { pipeline, transport, recorded } = pipelineWith();
  pipeline.start([claimedRow(1), claimedRow(2)], "tok-a", 0);
  pipeline.start([claimedRow(3)], "tok-b", 0);
  transport.sends[0]!.settle(outcomeOf());
  await settled();

  const rows = pipeline.abandon();
  expect(rows).toEqual([
    { deliveryId: 2, claimToken: "tok-a" },
    { deliveryId: 3, claimToken: "tok-b" },
  ]);
  expect(transport.sends.map((s) => s.abort.aborted)).toEqual([false, true, true]);
  // the aborted sends still end (the sender answers an abort with an outcome)
  transport.sends[1]!.settle(outcomeOf({ verdict: "transient", errorKind: "connection" }));
  transport.sends[2]!.settle(outcomeOf({ verdict: "transient", errorKind: "connection" }));
  await settled();
  expect(recorded.map((r) => r.deliveryId)).toEqual([1]);
  // released rows count as in flight until the drain has handed them back
  expect(pipeline.inFlight).toBe(2);
  pipeline.clear();
  expect(pipeline.inFlight).toBe(0);
});

test("a transport that throws loses nothing but the attempt: the row is left to its lease", async () => {
  const transport = fakeTransport();
  transport.send = () => Promise.reject(new Error("boom"));
  const { pipeline, recorded, logger } = pipelineWith(transport);
  pipeline.start([claimedRow(1)], "tok", 0);
  await settled();
  expect(recorded).toEqual([]);
  expect(logger.lines.map((l) => l.msg)).toEqual([
    "delivery crashed; its lease will bring it back",
  ]);
  expect(pipeline.inFlight).toBe(0);
});
