/**
 * Backpressure (docs/delivery.md, Backpressure): a receiver answering 429 with
 * `Retry-After: 3` to its first requests. The endpoint pauses for the time asked, no
 * request comes during a pause, the first claim after a pause takes one row and the room
 * grows back with the answers, the circuit stays closed (no failure counted, no circuit
 * event) and no attempt is used up: every delivery has maxAttempts 1, so one 429 counted
 * as an attempt would dead-letter it. And a half-open probe answered 429 is no verdict on
 * the circuit: it stays half-open until a probe after the pause closes it.
 *
 * End to end: the in-process API and one worker on a test database, a real receiver on
 * 127.0.0.1. The worker's statements read a test clock (helpers/test-clock.ts): the test
 * jumps it over each pause instead of sleeping, and the receiver stamps each request with
 * that clock, so arrivals are compared with the stored paused_until. The receiver holds
 * chosen requests until the test has read how many rows the claim put in flight.
 */
import { afterAll, beforeAll, expect, test } from "vitest";
import { dashboardClient } from "./helpers/dashboard-client.ts";
import {
  deliveryCalls,
  type ScriptedReceiver,
  startScriptedReceiver,
} from "./helpers/deliveries.ts";
import { type Harness, startHarness } from "./helpers/harness.ts";
import { inFlightOf } from "./helpers/in-flight.ts";
import { waitFor } from "./helpers/receiver.ts";
import { makeTestClock } from "./helpers/test-clock.ts";

let h: Harness;
let rx: ScriptedReceiver;
const clock = makeTestClock();

beforeAll(async () => {
  h = await startHarness();
  rx = await startScriptedReceiver();
  // the harness's worker, on the test clock
  h.startWorker({}, { clock: clock.sql });
});

afterAll(async () => {
  await h?.close();
  await rx?.close();
});

const { newApp, newEndpoint, send, waitForStatus } = deliveryCalls(() => h);

/** Resolves once the worker has claimed after this call: a message of its own delivered. */
async function claimRan(): Promise<void> {
  const appId = await newApp();
  const endpointId = await newEndpoint(appId, `${rx.url}${rx.route()}`);
  await waitForStatus(await send(appId), endpointId, "delivered");
}

interface Health {
  circuit_state: string;
  consecutive_failures: number;
  in_flight: number;
  paused_until: Date | null;
  concurrency_limit: number | null;
}

async function health(endpointId: string): Promise<Health> {
  const { rows } = await h.db.pool.query(
    `select circuit_state, consecutive_failures, ${inFlightOf("$1")} as in_flight, paused_until,
            concurrency_limit
     from endpoint_health where endpoint_id = $1`,
    [endpointId],
  );
  return rows[0];
}

/** The endpoint's rows in flight, counted on the rows themselves. */
async function inFlight(endpointId: string): Promise<number> {
  const { rows } = await h.db.pool.query(
    "select count(*)::int as n from deliveries where endpoint_id = $1 and status = 'in_flight'",
    [endpointId],
  );
  return rows[0].n;
}

async function rateLimitedAttempts(endpointId: string): Promise<number> {
  const { rows } = await h.db.pool.query(
    `select count(*)::int as n from attempts
     where endpoint_id = $1 and status_code = 429 and error_kind = 'rate_limited'
       and outcome = 'failure'`,
    [endpointId],
  );
  return rows[0].n;
}

test("429 + Retry-After: 3 pauses the endpoint, resumes it one row at a time, keeps the circuit closed and uses no attempt", async () => {
  /** the receiver's first LIMITED requests are answered 429 */
  const LIMITED = 4;
  const MESSAGES = 20;
  /** requests held until released: each limited one, and the first three after the last pause */
  const HELD = LIMITED + 3;
  const arrivals: number[] = [];
  const gates = new Map<number, () => void>();
  const path = rx.route(async (_req, n) => {
    arrivals[n] = clock.sql()!.getTime();
    if (n < HELD) await new Promise<void>((resolve) => gates.set(n, resolve));
    return n < LIMITED ? { status: 429, headers: { "retry-after": "3" } } : { status: 200 };
  });
  const release = async (n: number) => {
    await waitFor(() => gates.has(n), 15_000, `request ${n} to arrive`);
    gates.get(n)!();
  };

  const appId = await newApp();
  const endpointId = await newEndpoint(appId, `${rx.url}${path}`, {
    maxAttempts: 1,
    failureThreshold: 2,
    maxInFlight: 10,
    // above the pause (the harness's default cap is 200 ms) and the held requests
    retryCapMs: 60_000,
    timeoutMs: 30_000,
  });
  const msgIds = [await send(appId)];

  /** paused_until as stored after the k-th 429 */
  const pauses: number[] = [];
  for (let k = 0; k < LIMITED; k++) {
    await waitFor(() => gates.has(k), 15_000, `request ${k} to arrive`);
    if (k > 0) {
      // the first claim after the pause took one row, and a later claim took no more
      await claimRan();
      expect(await inFlight(endpointId)).toBe(1);
    }
    gates.get(k)!();
    await waitFor(
      async () =>
        (await rateLimitedAttempts(endpointId)) === k + 1 &&
        (await health(endpointId)).in_flight === 0,
      15_000,
      `the 429 of request ${k} to be recorded`,
    );
    const after = await health(endpointId);
    expect(after).toMatchObject({
      circuit_state: "closed",
      consecutive_failures: 0,
      concurrency_limit: 1,
    });
    pauses.push(after.paused_until!.getTime());
    if (k === 0) for (let i = 1; i < MESSAGES; i++) msgIds.push(await send(appId));
    await claimRan();
    // while the pause lasts (a slow machine may have outlived it), nothing more was sent
    if (clock.sql()!.getTime() < pauses[k]!) expect(rx.on(path)).toHaveLength(k + 1);
    clock.advance(Math.max(0, pauses[k]! - clock.sql()!.getTime()) + 5);
  }

  // After the last pause: one row, then (its 200 widening the room to 2) two at once.
  await waitFor(() => gates.has(LIMITED), 15_000, "the first request after the last pause");
  await claimRan();
  expect(await inFlight(endpointId)).toBe(1);
  gates.get(LIMITED)!();
  await waitFor(() => gates.has(LIMITED + 1) && gates.has(LIMITED + 2), 15_000, "two requests");
  await claimRan();
  expect(await inFlight(endpointId)).toBe(2);
  expect((await health(endpointId)).concurrency_limit).toBe(2);
  // the health resource shows the room grown back so far
  const shown = await h.call("GET", `/api/v1/app/${appId}/endpoint/${endpointId}/health`);
  expect(shown.body.limits).toMatchObject({ maxInFlight: 10, resumeRoom: 2 });
  // and so does the dashboard's endpoint page
  const admin = dashboardClient(h.api);
  await admin.signIn(h.adminKey);
  expect((await admin.get(`/dashboard/endpoints/${endpointId}`)).body).toContain(
    '<span data-testid="resuming">resuming: 2 of 10 in flight</span>',
  );
  await release(LIMITED + 1);
  await release(LIMITED + 2);

  for (const msgId of msgIds) await waitForStatus(msgId, endpointId, "delivered");
  expect(rx.on(path)).toHaveLength(MESSAGES + LIMITED);
  // no request came before the end of the pause the 429 before it set
  for (let k = 0; k < LIMITED; k++) expect(arrivals[k + 1]).toBeGreaterThanOrEqual(pauses[k]!);

  const { rows: events } = await h.db.pool.query(
    "select to_state from circuit_events where endpoint_id = $1",
    [endpointId],
  );
  expect(events).toEqual([]);
  expect(await health(endpointId)).toMatchObject({
    circuit_state: "closed",
    consecutive_failures: 0,
  });
  // grown back past maxInFlight: no longer resuming
  const after = await h.call("GET", `/api/v1/app/${appId}/endpoint/${endpointId}/health`);
  expect(after.body.limits.resumeRoom).toBeNull();
  // each 429 was recorded and gave its attempt back: one attempt used per delivery
  const { rows } = await h.db.pool.query(
    `select attempt_count - attempts_given_back as used, count(*)::int as n
     from deliveries where endpoint_id = $1 group by 1`,
    [endpointId],
  );
  expect(rows).toEqual([{ used: 1, n: MESSAGES }]);
});

test("a half-open probe answered 429 leaves the circuit half-open, paused, and the next probe after the pause closes it", async () => {
  const path = rx.route((_req, n) =>
    n === 0
      ? { status: 500 }
      : n === 1
        ? { status: 429, headers: { "retry-after": "3" } }
        : { status: 200 },
  );
  const appId = await newApp();
  const endpointId = await newEndpoint(appId, `${rx.url}${path}`, {
    failureThreshold: 1,
    maxAttempts: 5,
    retryCapMs: 60_000,
  });
  const msgId = await send(appId);
  await waitFor(
    async () => (await health(endpointId)).circuit_state === "open",
    15_000,
    "the circuit to open on the 500",
  );
  const events = async () =>
    (
      await h.db.pool.query(
        "select from_state || '>' || to_state as t from circuit_events where endpoint_id = $1 order by id",
        [endpointId],
      )
    ).rows.map((r) => r.t);

  // past the cooldown (and the 500's retry): the probe goes, and is answered 429
  const { rows } = await h.db.pool.query(
    "select extract(epoch from open_until)::float8 * 1000 as until from endpoint_health where endpoint_id = $1",
    [endpointId],
  );
  clock.advance(Math.max(0, rows[0].until - clock.sql()!.getTime()) + 60_000);
  await waitFor(
    async () => (await rateLimitedAttempts(endpointId)) === 1,
    15_000,
    "the probe's 429 to be recorded",
  );
  const after = await health(endpointId);
  expect(after).toMatchObject({ circuit_state: "half_open", consecutive_failures: 1 });
  expect(after.paused_until!.getTime()).toBeGreaterThan(clock.sql()!.getTime());
  expect(await events()).toEqual(["closed>open", "open>half_open"]);

  // past the pause and the lost probe's lease: a new probe, answered 200, closes the circuit
  clock.advance(120_000);
  await waitForStatus(msgId, endpointId, "delivered");
  await waitFor(
    async () => (await health(endpointId)).circuit_state === "closed",
    15_000,
    "the circuit to close",
  );
  expect(await events()).toEqual(["closed>open", "open>half_open", "half_open>closed"]);
  expect(rx.on(path)).toHaveLength(3);
});
