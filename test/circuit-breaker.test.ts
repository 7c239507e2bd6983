/**
 * The circuit breaker end to end, with 4 real worker processes (`node dist/cli/main.js
 * worker`) racing on one test database: the threshold opens the circuit, an open circuit
 * sends nothing and uses no attempts, every cooldown end admits exactly ONE probe across
 * all processes, failed probes double the cooldown up to the cap, a successful probe closes
 * the circuit and the backlog drains, and an operator can force a circuit closed.
 *
 * No test waits out a real cooldown: the SQL state machine reads its clock from
 * endpoint_health.open_until, so "time travel" is `update ... set open_until = now()`.
 * Nor does a test sleep to see that nothing more is sent: it asks the claim itself, at a
 * given time (its `now`, src/db/sql/clock.ts), in a transaction it rolls back.
 * The processes run with the default HealthConfig (threshold 10, cooldown 300 s, cap 1 h);
 * the endpoints set their own threshold and short retry delays.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { WORK_CHANNEL } from "../src/db/work-channel.ts";
import { resetCircuit } from "../src/health/circuit-transitions.ts";
import { claimableAt } from "./helpers/claimable.ts";
import { type Harness, startHarness } from "./helpers/harness.ts";
import { expectNoInFlightCounters, inFlightOf } from "./helpers/in-flight.ts";
import { killAll, startWorkers } from "./helpers/processes.ts";
import { type Receiver, type Reply, startReceiver, waitFor } from "./helpers/receiver.ts";

const V1 = "/api/v1";
const WORKERS = 4;

// ---------------------------------------------------------------- setup

let h: Harness;
let rx: Receiver;
/** per receiver path: what it answers now */
const replies = new Map<string, Reply>();

beforeAll(async () => {
  h = await startHarness({ ssrfAllowlist: ["127.0.0.0/8"] });
  rx = await startReceiver((req) => replies.get(req.path) ?? { status: 200 });
  await startWorkers(WORKERS, h.db.url);
}, 120_000);

afterAll(async () => {
  await killAll();
  await rx?.close();
  await h?.close();
});

// ---------------------------------------------------------------- helpers

let seq = 0;

/** An app with one endpoint at receiver path `/name`; returns the ids. */
async function makeEndpoint(name: string, policy: Record<string, unknown>) {
  const app = await h.call("POST", `${V1}/app`, { name: `cb-${name}-${++seq}` });
  expect(app.status).toBe(201);
  const ep = await h.call("POST", `${V1}/app/${app.body.id}/endpoint`, {
    url: `${rx.url}/${name}`,
    ...policy,
  });
  expect(ep.status, JSON.stringify(ep.body)).toBe(201);
  return { appId: app.body.id as string, endpointId: ep.body.id as string, path: `/${name}` };
}

async function send(appId: string, count: number): Promise<void> {
  for (let i = 0; i < count; i++) {
    const res = await h.call("POST", `${V1}/app/${appId}/msg`, { eventType: "cb", payload: { i } });
    expect(res.status).toBe(202);
  }
}

async function healthRow(endpointId: string) {
  const { rows } = await h.db.pool.query(
    `select circuit_state, consecutive_failures, cooldown_ms, ${inFlightOf("$1")} as in_flight,
            probe_delivery_id,
            opened_at, open_until,
            (extract(epoch from open_until - opened_at) * 1000)::float8 as open_for_ms
     from endpoint_health where endpoint_id = $1`,
    [endpointId],
  );
  return rows[0];
}

async function events(endpointId: string) {
  const { rows } = await h.db.pool.query(
    "select from_state, to_state, reason from circuit_events where endpoint_id = $1 order by id",
    [endpointId],
  );
  return rows as { from_state: string; to_state: string; reason: string }[];
}

async function deliveries(endpointId: string) {
  const { rows } = await h.db.pool.query(
    `select count(*)::int as n,
            coalesce(sum(attempt_count), 0)::int as attempts,
            count(*) filter (where status = 'in_flight')::int as in_flight,
            count(*) filter (where status = 'delivered')::int as delivered
     from deliveries where endpoint_id = $1`,
    [endpointId],
  );
  return rows[0] as { n: number; attempts: number; in_flight: number; delivered: number };
}

/** Ends the cooldown now (the injectable clock of the SQL state machine) and wakes the workers. */
async function endCooldown(endpointId: string): Promise<void> {
  const { rowCount } = await h.db.pool.query(
    "update endpoint_health set open_until = now() where endpoint_id = $1 and circuit_state = 'open'",
    [endpointId],
  );
  expect(rowCount).toBe(1);
  // All 4 processes wake at the same instant and race for the probe.
  await h.db.pool.query(`select pg_notify('${WORK_CHANNEL}', '')`);
}

/** How many rows of the endpoint a claim made at `now` would take, without taking them. */
const claimableCount = async (endpointId: string, now: Date) =>
  (await claimableAt(h, endpointId, now)).length;

// ---------------------------------------------------------------- tests

describe("circuit breaker with 4 worker processes", () => {
  // Shared by the tests of this block, which run in order: the second continues the first.
  let ep: Awaited<ReturnType<typeof makeEndpoint>>;
  const MESSAGES = 8;

  test("threshold reached → open; while open nothing is sent and no attempt is used", async () => {
    ep = await makeEndpoint("flaky", {
      failureThreshold: 3,
      maxAttempts: 100,
      retryBaseMs: 10,
      retryCapMs: 100,
    });
    replies.set(ep.path, { status: 500 });
    await send(ep.appId, MESSAGES);

    await waitFor(
      async () => (await healthRow(ep.endpointId)).circuit_state === "open",
      20_000,
      "the circuit to open",
    );
    // Requests that were in flight when it opened land and are recorded.
    await waitFor(
      async () => (await deliveries(ep.endpointId)).in_flight === 0,
      10_000,
      "stragglers",
    );

    const opened = await healthRow(ep.endpointId);
    expect(opened.circuit_state).toBe("open");
    expect(opened.consecutive_failures).toBeGreaterThanOrEqual(3);
    expect(opened.cooldown_ms).toBe(300_000); // HealthConfig default
    expect(opened.open_for_ms).toBe(300_000);
    expect(opened.in_flight).toBe(0);
    const evs = await events(ep.endpointId);
    expect(evs).toHaveLength(1);
    expect(evs[0]).toMatchObject({ from_state: "closed", to_state: "open" });
    expect(evs[0]!.reason).toMatch(/^\d+ consecutive failed attempts \(threshold 3\)$/);

    const sentBefore = rx.on(ep.path).length;
    const before = await deliveries(ep.endpointId);
    expect(before.n).toBe(MESSAGES);
    expect(before.attempts).toBe(sentBefore); // one attempt per request, all recorded
    // No claim takes anything until the cooldown is over, then exactly one row: the probe.
    // (open_until in whole milliseconds, rounded down: the database keeps microseconds)
    const openUntil = (opened.open_until as Date).getTime();
    expect(await claimableCount(ep.endpointId, new Date())).toBe(0);
    expect(await claimableCount(ep.endpointId, new Date(openUntil - 1))).toBe(0);
    expect(await claimableCount(ep.endpointId, new Date(openUntil + 1))).toBe(1);
    expect(rx.on(ep.path).length).toBe(sentBefore);
    expect(await deliveries(ep.endpointId)).toEqual(before);
    expect((await healthRow(ep.endpointId)).circuit_state).toBe("open");
    console.log(`circuit opened after ${sentBefore} requests`);
  });

  test("each cooldown end admits exactly one probe; failed probes double the cooldown to the cap; a good probe closes it and the backlog drains", async () => {
    expect(ep, "runs after the previous test").toBeDefined();
    const expected = [600_000, 1_200_000, 2_400_000, 3_600_000, 3_600_000];
    for (const [i, cooldown] of expected.entries()) {
      const sentBefore = rx.on(ep.path).length;
      const attemptsBefore = (await deliveries(ep.endpointId)).attempts;
      const reopenedBefore = (await events(ep.endpointId)).filter(
        (e) => e.from_state === "half_open",
      ).length;
      await endCooldown(ep.endpointId);
      await waitFor(
        async () =>
          (await events(ep.endpointId)).filter((e) => e.from_state === "half_open").length ===
          reopenedBefore + 1,
        15_000,
        `probe ${i + 1} to fail`,
      );
      // A second (wrong) probe would have been claimed before the circuit reopened (a claim
      // waiting for the health row reads it reopened and takes nothing): it would be in
      // flight now, or recorded as an attempt.
      expect(await deliveries(ep.endpointId)).toMatchObject({
        in_flight: 0,
        attempts: attemptsBefore + 1,
      });
      expect(rx.on(ep.path).length, `requests after cooldown end ${i + 1}`).toBe(sentBefore + 1);
      const row = await healthRow(ep.endpointId);
      expect(row.circuit_state).toBe("open");
      expect(row.cooldown_ms).toBe(cooldown);
      expect(row.open_for_ms).toBe(cooldown);
      expect(row.probe_delivery_id).toBeNull();
      expect(row.in_flight).toBe(0);
      const last = (await events(ep.endpointId)).slice(-2);
      expect(last).toEqual([
        { from_state: "open", to_state: "half_open", reason: "cooldown over; one probe sent" },
        {
          from_state: "half_open",
          to_state: "open",
          reason: `probe failed; cooling down for ${cooldown / 1000} s`,
        },
      ]);
    }

    // The endpoint recovers: the next probe succeeds.
    replies.set(ep.path, { status: 200 });
    const sentBefore = rx.on(ep.path).length;
    await endCooldown(ep.endpointId);
    await waitFor(
      async () => (await healthRow(ep.endpointId)).circuit_state === "closed",
      15_000,
      "the probe to close the circuit",
    );
    const closed = await healthRow(ep.endpointId);
    expect(closed.cooldown_ms).toBeNull();
    expect(closed.open_until).toBeNull();
    expect(closed.consecutive_failures).toBe(0);
    await waitFor(
      async () => (await deliveries(ep.endpointId)).delivered === MESSAGES,
      20_000,
      "the backlog to drain",
    );
    const { rows } = await h.db.pool.query("select status from deliveries where endpoint_id = $1", [
      ep.endpointId,
    ]);
    expect(rows.every((r) => r.status === "delivered")).toBe(true);
    // The probe was sent alone: only its request arrived before the circuit closed (the
    // event's time is the start of the transaction that closed it); then the rest.
    const { rows: closedAt } = await h.db.pool.query(
      "select at from circuit_events where endpoint_id = $1 and to_state = 'closed'",
      [ep.endpointId],
    );
    const closedMs = (closedAt[0].at as Date).getTime();
    const after = rx.on(ep.path).slice(sentBefore);
    expect(after.filter((r) => r.at < closedMs)).toHaveLength(1);
    expect(after.length).toBeGreaterThanOrEqual(MESSAGES);

    const evs = await events(ep.endpointId);
    expect(evs.map((e) => `${e.from_state}→${e.to_state}`)).toEqual([
      "closed→open",
      ...expected.flatMap(() => ["open→half_open", "half_open→open"]),
      "open→half_open",
      "half_open→closed",
    ]);
    expect(evs.at(-1)!.reason).toBe("probe succeeded");
    // The probe's attempts: one per cooldown end, nothing else while open.
    const { rows: attempts } = await h.db.pool.query(
      "select count(*)::int as n from attempts where endpoint_id = $1",
      [ep.endpointId],
    );
    expect(attempts[0].n).toBe(rx.on(ep.path).length);
    await expectNoInFlightCounters(h.db.pool);
  });
});

test("an operator reset closes an open circuit and the backlog drains", async () => {
  const ep = await makeEndpoint("reset", {
    failureThreshold: 2,
    maxAttempts: 100,
    retryBaseMs: 10,
    retryCapMs: 100,
  });
  replies.set(ep.path, { status: 503 });
  await send(ep.appId, 5);
  await waitFor(
    async () => (await healthRow(ep.endpointId)).circuit_state === "open",
    20_000,
    "the circuit to open",
  );
  await waitFor(
    async () => (await deliveries(ep.endpointId)).in_flight === 0,
    10_000,
    "stragglers",
  );

  replies.set(ep.path, { status: 204 });
  const res = await h.call("POST", `${V1}/app/${ep.appId}/endpoint/${ep.endpointId}/circuit/reset`);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  expect(res.body.circuit).toMatchObject({
    state: "closed",
    consecutiveFailures: 0,
    failureThreshold: 2,
    cooldownMs: 300_000,
    openUntil: null,
  });
  expect(res.body.circuit.history[0]).toMatchObject({
    from: "open",
    to: "closed",
    reason: "reset by operator",
  });

  await waitFor(
    async () => (await deliveries(ep.endpointId)).delivered === 5,
    20_000,
    "the backlog to drain",
  );
  const row = await healthRow(ep.endpointId);
  expect(row).toMatchObject({
    circuit_state: "closed",
    consecutive_failures: 0,
    cooldown_ms: null,
    in_flight: 0,
  });
  const evs = await events(ep.endpointId);
  expect(evs.map((e) => `${e.from_state}→${e.to_state}:${e.reason}`)).toEqual([
    expect.stringMatching(/^closed→open:\d+ consecutive failed attempts \(threshold 2\)$/),
    "open→closed:reset by operator",
  ]);
  await expectNoInFlightCounters(h.db.pool);
});

test("resetCircuit closes a circuit from any state in one statement and says where it came from", async () => {
  const ep = await makeEndpoint("reset-direct", { failureThreshold: 2 });
  // a half-open circuit with its probe out, a doubled cooldown and a Retry-After pause
  await h.db.pool.query(
    `update endpoint_health
     set circuit_state = 'half_open', consecutive_failures = 7, cooldown_ms = 600000,
         opened_at = now(), open_until = now(), probe_delivery_id = 1,
         probe_until = now() + interval '1 minute', paused_until = now() + interval '1 minute'
     where endpoint_id = $1`,
    [ep.endpointId],
  );
  expect(await resetCircuit(h.db.pool, ep.endpointId)).toBe("half_open");
  const { rows } = await h.db.pool.query(
    `select circuit_state, consecutive_failures, cooldown_ms, opened_at, open_until,
            probe_delivery_id, probe_until, paused_until
     from endpoint_health where endpoint_id = $1`,
    [ep.endpointId],
  );
  expect(rows[0]).toEqual({
    circuit_state: "closed",
    consecutive_failures: 0,
    cooldown_ms: null,
    opened_at: null,
    open_until: null,
    probe_delivery_id: null,
    probe_until: null,
    paused_until: null,
  });
  // a closed circuit reset again is still recorded: an operator acted
  expect(await resetCircuit(h.db.pool, ep.endpointId)).toBe("closed");
  expect(
    (await events(ep.endpointId)).map((e) => `${e.from_state}→${e.to_state}:${e.reason}`),
  ).toEqual(["half_open→closed:reset by operator", "closed→closed:reset by operator"]);
});
