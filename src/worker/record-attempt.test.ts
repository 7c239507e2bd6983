import { expect, test } from "vitest";
import { httpOutcome } from "../delivery/http/http-transport.ts";
import type { AttemptResult } from "../delivery/http-sender.ts";
import { BACKPRESSURE_GIVE_BACKS } from "../domain/backpressure.ts";
import type { ClaimedDelivery } from "../queue/claim-deliveries.ts";
import type { DeliveryResult } from "../queue/record-results.ts";
import { makeRedactor } from "../security/redact.ts";
import { makeAttemptRecorder } from "./record-attempt.ts";

const claim: ClaimedDelivery = {
  id: 7,
  messageMs: 0,
  messageId: "msg_1",
  endpointId: "ep_1",
  appId: "app_1",
  attemptCount: 1,
  maxAttempts: 3,
  trigger: "scheduled",
  eventType: "t",
  payload: '{"email":"someone@example.test","order_id":"ORD-12345"}',
  url: "https://example.test/hook?click_id=abc123&x=1",
  headers: {},
  timeoutMs: 2_000,
  retryBaseMs: null,
  retryCapMs: 5_000,
  secrets: [],
  isProbe: true,
  eventId: null,
  method: "POST",
  bodyFormat: "json",
  urlToken: null,
  missingFields: "fail",
  successRule: null,
  failureNotified: false,
};

/** An HTTP sender's result, as the HTTP transport hands it to the recorder. */
const outcome = (extra: Partial<AttemptResult>) =>
  httpOutcome({
    startedAt: new Date(Date.UTC(2025, 0, 1)),
    latencyMs: 12,
    statusCode: 200,
    verdict: "success",
    errorKind: null,
    error: null,
    responseBody: null,
    retryAfterMs: null,
    ...extra,
  });

function recorder() {
  const written: DeliveryResult[] = [];
  const r = makeAttemptRecorder({
    writer: { add: (x) => written.push(x) },
    redactor: makeRedactor(),
    defaults: { retryBaseMs: 1_000, retryCapMs: 60_000 },
  });
  return { r, written };
}

test("a success is recorded as delivered, attempt number one past the claim's count, URL masked", () => {
  const { r, written } = recorder();
  r.record(claim, "tok", outcome({}), true);
  expect(written).toEqual([
    {
      deliveryId: 7,
      messageMs: 0,
      claimToken: "tok",
      messageId: "msg_1",
      endpointId: "ep_1",
      appId: "app_1",
      trigger: "scheduled",
      url: "https://example.test/hook?click_id=***&x=1",
      attemptNumber: 2,
      nextStatus: "delivered",
      retryDelayMs: 0,
      startedAt: new Date(Date.UTC(2025, 0, 1)),
      latencyMs: 12,
      success: true,
      statusCode: 200,
      errorKind: null,
      error: null,
      responseBody: null,
      isProbe: true,
      pauseMs: null,
      finishesClaim: true,
      operationalEvent: null,
    },
  ]);
});

test("a 503 with Retry-After: failed with the delay, the endpoint paused at most the endpoint's cap", () => {
  const { r, written } = recorder();
  r.record(
    claim,
    "tok",
    outcome({ statusCode: 503, verdict: "transient", errorKind: "http", retryAfterMs: 9_000 }),
    false,
  );
  expect(written[0]).toMatchObject({
    nextStatus: "failed",
    retryDelayMs: 5_000,
    pauseMs: 5_000,
    success: false,
    finishesClaim: false,
  });
});

test("the last attempt's failure dead-letters; echoed payload values are masked in the stored texts", () => {
  const { r, written } = recorder();
  r.record(
    { ...claim, attemptCount: 2 },
    "tok",
    outcome({
      statusCode: 500,
      verdict: "transient",
      errorKind: "http",
      error: "HTTP 500 for ORD-12345",
      responseBody: "could not find order ORD-12345 of someone@example.test",
    }),
    true,
  );
  expect(written[0]).toMatchObject({
    attemptNumber: 3,
    nextStatus: "dead_letter",
    error: "HTTP 500 for ***",
    responseBody: "could not find order *** of ***",
  });
});

test("operational events: raised only with a target, never for the operator application's own deliveries", () => {
  const target = { appId: "app_operator", defaultMaxAttempts: 5 };
  const events = (claimed: ClaimedDelivery, operational: typeof target | null, status: number) => {
    const written: DeliveryResult[] = [];
    makeAttemptRecorder({
      writer: { add: (x) => written.push(x) },
      redactor: makeRedactor(["click_id"]),
      defaults: { retryBaseMs: 10, retryCapMs: 100 },
      operational,
    }).record(
      claimed,
      "tok",
      outcome({ statusCode: status, verdict: status === 200 ? "success" : "transient" }),
      true,
    );
    return written[0]!.operationalEvent;
  };
  const last = { ...claim, attemptCount: 2, maxAttempts: 3 };
  expect(events(last, target, 500)).toBe("message.attempt.exhausted");
  expect(events(last, null, 500)).toBeNull();
  expect(events({ ...last, appId: "app_operator" }, target, 500)).toBeNull();
  const fourth = { ...claim, attemptCount: 3, maxAttempts: 8 };
  expect(events(fourth, target, 500)).toBe("message.attempt.failing");
  expect(events({ ...claim, failureNotified: true }, target, 200)).toBe(
    "message.attempt.recovered",
  );
  expect(events({ ...claim, failureNotified: false }, target, 200)).toBeNull();
});

test("a backpressure answer gives its attempt back up to BACKPRESSURE_GIVE_BACKS times, then it counts", () => {
  const { r, written } = recorder();
  const limited = outcome({
    statusCode: 429,
    verdict: "transient",
    errorKind: "rate_limited",
    retryAfterMs: 3_000,
  });
  // the last attempt of its budget: given back, so it is retried after the pause
  const last = { ...claim, attemptCount: 2, maxAttempts: 3 };
  r.record({ ...last, attemptsGivenBack: BACKPRESSURE_GIVE_BACKS - 1 }, "tok", limited, true);
  expect(written[0]).toMatchObject({
    attemptNumber: 3,
    nextStatus: "failed",
    retryDelayMs: 3_000,
    pauseMs: 3_000,
    backpressure: true,
    givenBack: 1,
    errorKind: "rate_limited",
    statusCode: 429,
  });
  // the bound is reached: 2 attempts used and 10 given back, this 13th request is the
  // budget's last: it uses the attempt (and still pauses, as backpressure)
  r.record(
    {
      ...claim,
      attemptCount: 2 + BACKPRESSURE_GIVE_BACKS,
      maxAttempts: 3,
      attemptsGivenBack: BACKPRESSURE_GIVE_BACKS,
    },
    "tok",
    limited,
    true,
  );
  expect(written[1]).toMatchObject({ nextStatus: "dead_letter", backpressure: true });
  expect(written[1]!.givenBack).toBeUndefined();
  // attempts given back earlier still widen the budget: 2 used of 3 + 5 given back
  r.record(
    { ...last, attemptsGivenBack: 5 },
    "tok",
    outcome({ statusCode: 500, verdict: "transient", errorKind: "http" }),
    true,
  );
  expect(written[2]).toMatchObject({ nextStatus: "failed" });
  expect(written[2]!.backpressure).toBeUndefined();
});

test("a 429 without a usable Retry-After is backpressure without a pause: the normal backoff, its attempt given back", () => {
  const { r, written } = recorder();
  r.record(
    { ...claim, attemptCount: 2, maxAttempts: 3 },
    "tok",
    outcome({ statusCode: 429, verdict: "transient", errorKind: "rate_limited" }),
    true,
  );
  expect(written[0]).toMatchObject({ nextStatus: "failed", pauseMs: null, givenBack: 1 });
  expect(written[0]!.retryDelayMs).toBeLessThanOrEqual(5_000);
});

test("with the event loop's lateness meter, a result carries the worker's own share of its latency", () => {
  const written: DeliveryResult[] = [];
  const asked: number[] = [];
  const r = makeAttemptRecorder({
    writer: { add: (x) => written.push(x) },
    redactor: makeRedactor(),
    defaults: { retryBaseMs: 1_000, retryCapMs: 60_000 },
    lateness: {
      ownShare: (ms) => {
        asked.push(ms);
        return ms * 0.75 + 0.4;
      },
    },
  });
  r.record(claim, "tok", { ...outcome({}), latencyMs: 400 }, true);
  // asked for the attempt's own latency; the share in whole ms
  expect(asked).toEqual([400]);
  expect(written[0]).toMatchObject({ latencyMs: 400, workerLateMs: 300 });
});
