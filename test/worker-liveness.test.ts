/**
 * Worker liveness with real `hookrelay worker` processes (docs/worker-liveness.md): a
 * SIGKILLed worker's claims go out again from another worker long before their lease would
 * run out, its endpoints' in-flight slots and half-open probe freed with them; a worker that
 * is merely slow is never taken over; a worker whose liveness connection is cut gets its
 * lock back under the same number and keeps delivering.
 */
import http from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { afterAll, afterEach, beforeAll, expect, test } from "vitest";
import { enqueueMessage } from "../src/queue/enqueue-message.ts";
import { WORKER_LOCK_CLASS } from "../src/queue/worker-lock.ts";
import { type Harness, startHarness } from "./helpers/harness.ts";
import { inFlightOf } from "./helpers/in-flight.ts";
import { type HookrelayProcess, isRunning, killAll, startWorkers } from "./helpers/processes.ts";
import { waitFor } from "./helpers/receiver.ts";

// ---------------------------------------------------------------- a receiver that holds

interface Arrival {
  id: string;
  at: number;
  /** the connection closed before an answer was written */
  aborted: boolean;
}

interface HoldingReceiver {
  url: string;
  arrivals: Arrival[];
  /** while true every request is held open unanswered; afterwards each is answered 200 */
  holding: boolean;
  /** answer every request after this long (when not holding) */
  delayMs: number;
  close(): Promise<void>;
}

async function startHoldingReceiver(): Promise<HoldingReceiver> {
  const sockets = new Set<Socket>();
  const rx: HoldingReceiver = {
    url: "",
    arrivals: [],
    holding: true,
    delayMs: 0,
    close: async () => undefined,
  };
  const server = http.createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      const a: Arrival = { id: String(req.headers["webhook-id"]), at: Date.now(), aborted: false };
      rx.arrivals.push(a);
      res.on("close", () => {
        if (!res.writableFinished) a.aborted = true;
      });
      if (rx.holding) return;
      setTimeout(() => {
        if (!res.destroyed) res.end("ok");
      }, rx.delayMs);
    });
  });
  server.on("connection", (s) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  rx.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  rx.close = () =>
    new Promise<void>((resolve) => {
      for (const s of sockets) s.destroy();
      server.close(() => resolve());
    });
  return rx;
}

// ---------------------------------------------------------------- setup

/**
 * The judging workers' HOOKRELAY_LIVENESS_JUDGE_AFTER_MS: a worker judges others only once
 * it has held its own lock this long (3 s by default, for database restarts); here short,
 * so the tests wait for it at test speed.
 */
const JUDGE_AFTER_MS = 500;

let h: Harness;
const closers: (() => Promise<void>)[] = [];

beforeAll(async () => {
  h = await startHarness();
});

afterEach(async () => {
  await killAll();
  while (closers.length > 0) await closers.pop()!();
});

afterAll(async () => {
  await killAll();
  await h?.close();
});

/** An app with one endpoint (each message is one delivery). */
async function makeEndpoint(url: string, policy: Record<string, unknown>) {
  const app = await h.call("POST", "/api/v1/app", { name: "liveness" });
  expect(app.status).toBe(201);
  const ep = await h.call("POST", `/api/v1/app/${app.body.id}/endpoint`, { url, ...policy });
  expect(ep.status, JSON.stringify(ep.body)).toBe(201);
  return { appId: app.body.id as string, endpointId: ep.body.id as string };
}

async function enqueue(appId: string, n: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const r = await enqueueMessage(h.db.pool, { appId, eventType: "t", payload: `{"i":${i}}` }, 5);
    ids.push(r.messageId);
  }
  return ids;
}

/** The worker locks held right now (migration 0008), by the backend holding each. */
async function heldWorkerLocks(): Promise<{ lock: number; pid: number }[]> {
  const { rows } = await h.db.pool.query(
    `select l.objid::int as lock, l.pid
     from pg_locks l
     where l.locktype = 'advisory' and l.granted and l.objsubid = 2
       and l.classid = $1::oid and l.database = (select oid from pg_database where datname = current_database())
     order by l.objid`,
    [WORKER_LOCK_CLASS],
  );
  return rows;
}

/** Starts `n` workers and resolves once their locks have been held long enough to judge others'. */
async function startJudgingWorkers(
  n: number,
  env: Record<string, string> = {},
): Promise<HookrelayProcess[]> {
  // By lock number, not by count: a worker the previous test SIGKILLed may still hold its
  // lock for a moment (until its backend notices the closed socket), and its release would
  // cancel the new lock out of a count. Numbers come from a sequence and are never reused.
  const before = new Set((await heldWorkerLocks()).map((l) => l.lock));
  const workers = await startWorkers(n, h.db.url, {
    HOOKRELAY_LIVENESS_JUDGE_AFTER_MS: String(JUDGE_AFTER_MS),
    ...env,
  });
  await waitFor(
    async () => (await heldWorkerLocks()).filter((l) => !before.has(l.lock)).length === n,
    10_000,
    "the workers' locks",
  );
  await new Promise((r) => setTimeout(r, JUDGE_AFTER_MS + 300));
  return workers;
}

async function deliveryRows(appIds: string[]) {
  const { rows } = await h.db.pool.query(
    `select d.message_id, d.status, d.attempt_count,
            (select count(*)::int from attempts a where a.delivery_id = d.id) as attempts
     from deliveries d where d.app_id = any ($1::text[]) order by d.id`,
    [appIds],
  );
  return rows;
}

// ---------------------------------------------------------------- tests

test("a SIGKILLed worker's deliveries go out again from another worker long before their lease, its in-flight slots and probe freed", async () => {
  const rx = await startHoldingReceiver();
  closers.push(() => rx.close());
  // A 60 s timeout: the lease is 90 s, so nothing the lease does could pass this test.
  const timeoutMs = 60_000;
  const single = await makeEndpoint(`${rx.url}/single`, { timeoutMs, maxInFlight: 1 });
  // five held at once: an adaptive limit starts at one and grows only on answers
  const wide = await makeEndpoint(`${rx.url}/wide`, { timeoutMs, adaptiveConcurrency: "off" });
  const probed = await makeEndpoint(`${rx.url}/probed`, { timeoutMs });
  const appIds = [single.appId, wide.appId, probed.appId];
  // The probed endpoint's circuit is open with its cooldown over: its next claim is the probe.
  await h.db.pool.query(
    "update endpoint_health set circuit_state = 'open', opened_at = now(), open_until = now() where endpoint_id = $1",
    [probed.endpointId],
  );

  const [doomed] = await startWorkers(1, h.db.url);
  const singleIds = await enqueue(single.appId, 2);
  const wideIds = await enqueue(wide.appId, 5);
  const probeIds = await enqueue(probed.appId, 1);
  // Held by the first worker: one on `single` (its whole in-flight allowance), five on
  // `wide`, and the probe.
  const held = [singleIds[0]!, ...wideIds, ...probeIds];
  await waitFor(() => rx.arrivals.length >= held.length, 20_000, "the first worker's requests");
  expect(new Set(rx.arrivals.map((a) => a.id))).toEqual(new Set(held));
  const { rows: claims } = await h.db.pool.query(
    "select worker_lock, (extract(epoch from lease_expires_at) * 1000)::float8 as lease_ends from claims",
  );
  const [doomedLock] = await heldWorkerLocks();
  expect(claims.length).toBeGreaterThan(0);
  for (const c of claims) expect(c.worker_lock).toBe(doomedLock!.lock);
  const leaseEnds = Math.min(...claims.map((c) => c.lease_ends as number));
  const { rows: probeState } = await h.db.pool.query(
    "select circuit_state from endpoint_health where endpoint_id = $1",
    [probed.endpointId],
  );
  expect(probeState).toEqual([{ circuit_state: "half_open" }]);

  // A second worker, alive long enough to judge: it leaves the live worker's claims alone.
  // It polls at the default interval, so the time printed below is what a deployment sees.
  const [survivor] = await startJudgingWorkers(1, { HOOKRELAY_POLL_INTERVAL_MS: "1000" });
  expect(rx.arrivals).toHaveLength(held.length);

  rx.holding = false;
  const killedAt = Date.now();
  process.kill(doomed!.pid, "SIGKILL");
  await doomed!.exited;
  const seconds = () => rx.arrivals.slice(held.length);
  await waitFor(
    () => held.every((id) => seconds().some((a) => a.id === id)),
    30_000,
    "every held delivery sent again",
  );
  const resent = held.map((id) => seconds().find((a) => a.id === id)!.at - killedAt);
  console.log(
    `crash to redelivery: first ${Math.min(...resent)} ms, last ${Math.max(...resent)} ms ` +
      `(${held.length} deliveries; their lease would have run out ${Math.round((leaseEnds - killedAt) / 1000)} s after the kill)`,
  );
  // The kill really caught them in flight, and they came back through liveness, not the lease.
  for (const id of held) expect(rx.arrivals.find((a) => a.id === id)!.aborted).toBe(true);
  expect(Math.max(...resent) + killedAt).toBeLessThan(leaseEnds);

  // `single`'s slot was freed: its second message goes out; the new probe closed the circuit.
  await waitFor(
    async () => (await deliveryRows(appIds)).every((r) => r.status === "delivered"),
    20_000,
    "every delivery delivered",
  );
  for (const r of await deliveryRows(appIds)) {
    // The hand-back used no attempt: each was tried once, by the survivor.
    expect(r).toMatchObject({ status: "delivered", attempt_count: 1, attempts: 1 });
  }
  const { rows: health } = await h.db.pool.query(
    `select h.endpoint_id, ${inFlightOf("h.endpoint_id")} as in_flight, h.circuit_state
     from endpoint_health h where h.endpoint_id = any ($1::text[]) order by h.endpoint_id`,
    [[single.endpointId, wide.endpointId, probed.endpointId]],
  );
  for (const row of health) expect(row).toMatchObject({ in_flight: 0, circuit_state: "closed" });
  expect((await h.db.pool.query("select token from claims")).rows).toEqual([]);
  expect(isRunning(survivor!)).toBe(true);
});

test("a worker that is merely slow (a request near its timeout, past the liveness judging delay) is never taken over", async () => {
  const rx = await startHoldingReceiver();
  closers.push(() => rx.close());
  rx.holding = false;
  // Close to the endpoint's timeout, while both workers are judging (every 50 ms): a
  // hand-back of live claims would show as a second arrival or an aborted request. (Only
  // liveness can hand back here: the lease is the timeout + 30 s.)
  rx.delayMs = 2_000;
  const slow = await makeEndpoint(`${rx.url}/slow`, { timeoutMs: rx.delayMs + 1_000 });
  // Both workers judge each other's claims every 50 ms for the whole request.
  await startJudgingWorkers(2);
  const ids = await enqueue(slow.appId, 3);

  await waitFor(
    async () => (await deliveryRows([slow.appId])).every((r) => r.status === "delivered"),
    40_000,
    "the slow deliveries delivered",
  );
  expect(rx.arrivals.map((a) => a.id).sort()).toEqual([...ids].sort());
  for (const a of rx.arrivals) expect(a.aborted).toBe(false);
  for (const r of await deliveryRows([slow.appId])) {
    expect(r).toMatchObject({ status: "delivered", attempt_count: 1, attempts: 1 });
  }
});

test("a worker whose liveness connection is cut keeps running, takes its lock back under the same number and delivers", async () => {
  const rx = await startHoldingReceiver();
  closers.push(() => rx.close());
  rx.holding = false;
  const ep = await makeEndpoint(`${rx.url}/cut`, {});
  const [worker] = await startWorkers(1, h.db.url);
  await waitFor(async () => (await heldWorkerLocks()).length === 1, 10_000, "the worker's lock");
  const [before] = await heldWorkerLocks();

  for (let cut = 1; cut <= 2; cut++) {
    const [current] = await heldWorkerLocks();
    const { rows } = await h.db.pool.query("select pg_terminate_backend($1) as ok", [current!.pid]);
    expect(rows[0].ok).toBe(true);
    await waitFor(
      async () => {
        const locks = await heldWorkerLocks();
        return locks.length === 1 && locks[0]!.pid !== current!.pid;
      },
      10_000,
      `the lock taken again after cut ${cut}`,
    );
  }
  const [after] = await heldWorkerLocks();
  expect(after!.lock).toBe(before!.lock);
  expect(isRunning(worker!)).toBe(true);

  const ids = await enqueue(ep.appId, 5);
  await waitFor(
    async () => (await deliveryRows([ep.appId])).every((r) => r.status === "delivered"),
    20_000,
    "deliveries after the cuts",
  );
  expect(rx.arrivals.map((a) => a.id).sort()).toEqual([...ids].sort());
  expect(worker!.stderr + worker!.stdout).toMatch(/liveness connection lost/);
});
