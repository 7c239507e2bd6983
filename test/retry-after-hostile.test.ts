/**
 * A receiver answering 429 with an invalid Retry-After (`-5`, `1.5`) gets the normal
 * backoff: the header is ignored, the endpoint is not paused, and the next attempt is due
 * after the jittered delay, not at once (docs/delivery.md, Retries). Before, `-5` was read as
 * a date in 2001, so every attempt went out at once and the message was dead-lettered.
 * A 429 stays backpressure whatever its header (docs/delivery.md, Backpressure): each bad
 * value's rule is checked at the end, with 503's (backpressure only with a usable value).
 *
 * End to end: the in-process API and one worker on a test database, a real receiver on
 * 127.0.0.1. Math.random is pinned to 0.5 while an attempt is recorded, so the full-jitter
 * delay is exactly half its ceiling and the assertions read the recorded next_attempt_at
 * instead of waiting for the retry.
 */
import { afterAll, afterEach, beforeAll, expect, test, vi } from "vitest";
import {
  deliveryCalls,
  type ScriptedReceiver,
  startScriptedReceiver,
} from "./helpers/deliveries.ts";
import { type Harness, startHarness } from "./helpers/harness.ts";
import { waitFor } from "./helpers/receiver.ts";

let h: Harness;
let rx: ScriptedReceiver;

beforeAll(async () => {
  h = await startHarness();
  rx = await startScriptedReceiver();
  h.startWorker();
});

afterEach(() => {
  vi.restoreAllMocks();
});

afterAll(async () => {
  await h?.close();
  await rx?.close();
});

const { newApp, newEndpoint, send, attemptRows } = deliveryCalls(() => h);

// After attempt 1 the jittered delay is random() * min(cap, base * 2^1): 0.5 * 20 min.
const BASE_MS = 600_000;
const CAP_MS = 3_600_000;
const HALF_CEILING_MS = 0.5 * Math.min(CAP_MS, BASE_MS * 2);

interface AfterFirstAttempt {
  status: string;
  attemptCount: number;
  /** the attempt's error kind: rate_limited for backpressure (docs/delivery.md, Backpressure) */
  errorKind: string;
  /** the endpoint's consecutive failures after it: backpressure does not count */
  failures: number;
  /** attempts given back to the delivery */
  givenBack: number;
  /** next_attempt_at - the attempt's created_at (the result write's now), in ms */
  dueInMs: number;
  /** endpoint_health.paused_until - the attempt's created_at, in ms; null when not paused */
  pausedForMs: number | null;
}

/** Sends one message to an endpoint always answering `status` (429) with `retryAfter`, and reads the rows after attempt 1. */
async function firstAttemptWith(retryAfter: string, status = 429): Promise<AfterFirstAttempt> {
  vi.spyOn(Math, "random").mockReturnValue(0.5);
  const appId = await newApp();
  const path = rx.route(() => ({ status, headers: { "retry-after": retryAfter } }));
  const endpointId = await newEndpoint(appId, `${rx.url}${path}`, {
    maxAttempts: 2,
    retryBaseMs: BASE_MS,
    retryCapMs: CAP_MS,
  });
  const msgId = await send(appId);
  await waitFor(
    async () => (await attemptRows(msgId)).length === 1,
    10_000,
    "the first attempt to be recorded",
  );
  const { rows } = await h.db.pool.query(
    `select d.status, d.attempt_count, a.error_kind, h.consecutive_failures,
            d.attempts_given_back,
            extract(epoch from d.next_attempt_at - a.created_at) * 1000 as due_in_ms,
            extract(epoch from h.paused_until - a.created_at) * 1000 as paused_for_ms
     from deliveries d
     join attempts a on a.delivery_id = d.id
     left join endpoint_health h on h.endpoint_id = d.endpoint_id
     where d.message_id = $1 and d.endpoint_id = $2`,
    [msgId, endpointId],
  );
  const row = rows[0];
  return {
    status: row.status,
    attemptCount: row.attempt_count,
    errorKind: row.error_kind,
    failures: row.consecutive_failures,
    givenBack: row.attempts_given_back,
    dueInMs: Number(row.due_in_ms),
    pausedForMs: row.paused_for_ms === null ? null : Number(row.paused_for_ms),
  };
}

test.each(["-5", "1.5"])(
  "429 with Retry-After: %s is ignored: the normal backoff applies, no pause, no dead letter",
  async (retryAfter) => {
    const after = await firstAttemptWith(retryAfter);
    expect(after.status).toBe("failed");
    expect(after.attemptCount).toBe(1);
    // half the ceiling from when the attempt was recorded (the statement that wrote it set
    // the due time from the same now())
    expect(after.dueInMs).toBe(HALF_CEILING_MS);
    expect(after.pausedForMs).toBeNull();
  },
);

test("a valid Retry-After: 120 sets the delay and pauses the endpoint instead (the control)", async () => {
  const after = await firstAttemptWith("120");
  expect(after.status).toBe("failed");
  expect(after.dueInMs).toBe(120_000);
  expect(after.pausedForMs).toBe(120_000);
});

test("a huge Retry-After is clamped to the endpoint's cap", async () => {
  const after = await firstAttemptWith("99999999999999999999");
  expect(after.dueInMs).toBe(CAP_MS);
  expect(after.pausedForMs).toBe(CAP_MS);
});

// Backpressure (docs/delivery.md, Backpressure): each bad value's rule.

test.each(["-5", "soon"])(
  "429 with Retry-After: %s is still backpressure: not counted by the circuit, its attempt given back",
  async (retryAfter) => {
    const after = await firstAttemptWith(retryAfter);
    expect(after).toMatchObject({ errorKind: "rate_limited", failures: 0, givenBack: 1 });
    expect(after.pausedForMs).toBeNull();
    expect(after.dueInMs).toBe(HALF_CEILING_MS);
  },
);

test.each(["0", "Sun, 06 Nov 1994 08:49:37 GMT"])(
  "Retry-After: %s (now, or a date in the past) pauses for the 1 s floor",
  async (retryAfter) => {
    const after = await firstAttemptWith(retryAfter);
    expect(after).toMatchObject({ errorKind: "rate_limited", failures: 0, givenBack: 1 });
    expect(after.dueInMs).toBe(1_000);
    expect(after.pausedForMs).toBe(1_000);
  },
);

test("a 503 with a usable Retry-After is backpressure; with an invalid one it is an ordinary failure", async () => {
  const limited = await firstAttemptWith("120", 503);
  expect(limited).toMatchObject({ errorKind: "rate_limited", failures: 0, givenBack: 1 });
  expect(limited.pausedForMs).toBe(120_000);

  const failed = await firstAttemptWith("-5", 503);
  expect(failed).toMatchObject({ errorKind: "http", failures: 1, givenBack: 0 });
  expect(failed.pausedForMs).toBeNull();
  expect(failed.dueInMs).toBe(HALF_CEILING_MS);
});
