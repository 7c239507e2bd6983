/**
 * Rate limits and back-pressure across 3 real worker processes (`node dist/cli/main.js
 * worker`) sharing one test database: max in-flight holds across processes, a Retry-After
 * pauses one endpoint and no other, and the in-flight counters end at zero (and are
 * repaired by reconcileInFlight when corrupted). The per-second token bucket is checked on
 * the claim's own clock in test/token-bucket.test.ts.
 */
import { afterAll, beforeAll, expect, test } from "vitest";
import { WORK_CHANNEL } from "../src/db/work-channel.ts";
import { reconcileInFlight } from "../src/health/in-flight.ts";
import { enqueueMessage } from "../src/queue/enqueue-message.ts";
import { claimableAt } from "./helpers/claimable.ts";
import { type Harness, startHarness } from "./helpers/harness.ts";
import { expectNoInFlightCounters, setInFlight } from "./helpers/in-flight.ts";
import { killAll, startWorkers } from "./helpers/processes.ts";
import { type Receiver, type Reply, startReceiver, waitFor } from "./helpers/receiver.ts";

const V1 = "/api/v1";
const WORKERS = 3;

// ---------------------------------------------------------------- setup

let h: Harness;
let rx: Receiver;
/** per receiver path: how it answers (request index among that path's requests) */
const handlers = new Map<string, (n: number) => Reply | Promise<Reply>>();
const counts = new Map<string, number>();

beforeAll(async () => {
  h = await startHarness({ ssrfAllowlist: ["127.0.0.0/8"] });
  rx = await startReceiver((req) => {
    const n = counts.get(req.path) ?? 0;
    counts.set(req.path, n + 1);
    return handlers.get(req.path)?.(n) ?? { status: 200 };
  });
  const t0 = Date.now();
  await startWorkers(WORKERS, h.db.url, {
    // Maintenance (which also reconciles in-flight counters) runs once at start only, so
    // the reconcile test below sees its own repair.
    HOOKRELAY_MAINTENANCE_INTERVAL_MS: "3600000",
    HOOKRELAY_STATS_INTERVAL_MS: "3600000",
  });
  console.log(`${WORKERS} worker processes started in ${Date.now() - t0} ms`);
}, 120_000);

afterAll(async () => {
  await killAll();
  await rx?.close();
  await h?.close();
});

// ---------------------------------------------------------------- helpers

let seq = 0;

/** An app with one endpoint at receiver path `/name`. */
async function makeEndpoint(name: string, policy: Record<string, unknown> = {}) {
  const app = await h.call("POST", `${V1}/app`, { name: `rl-${name}-${++seq}` });
  expect(app.status).toBe(201);
  const ep = await h.call("POST", `${V1}/app/${app.body.id}/endpoint`, {
    url: `${rx.url}/${name}`,
    ...policy,
  });
  expect(ep.status, JSON.stringify(ep.body)).toBe(201);
  return { appId: app.body.id as string, endpointId: ep.body.id as string, path: `/${name}` };
}

async function enqueue(appId: string, count: number): Promise<void> {
  for (let start = 0; start < count; start += 100) {
    await Promise.all(
      Array.from({ length: Math.min(100, count - start) }, (_, k) =>
        enqueueMessage(h.db.pool, { appId, eventType: "rl", payload: `{"i":${start + k}}` }, 5),
      ),
    );
  }
}

async function delivered(endpointId: string): Promise<number> {
  const { rows } = await h.db.pool.query(
    "select count(*)::int as n from deliveries where endpoint_id = $1 and status = 'delivered'",
    [endpointId],
  );
  return rows[0].n;
}

// ---------------------------------------------------------------- tests

test("max in-flight 2 holds across 3 worker processes", async () => {
  // adaptive concurrency off: its limit would start at 1 and be cut by the held requests'
  // latency (test/adaptive-concurrency.test.ts); this is maxInFlight's own test
  const ep = await makeEndpoint("narrow", { maxInFlight: 2, adaptiveConcurrency: "off" });
  let active = 0;
  let peak = 0;
  // The receiver holds each request until the test lets it go: while two are held, the
  // limit is what keeps a third away.
  const held: Array<() => void> = [];
  handlers.set(ep.path, async () => {
    active++;
    peak = Math.max(peak, active);
    await new Promise<void>((go) => held.push(go));
    active--;
    return { status: 200 };
  });
  const MESSAGES = 12;
  await enqueue(ep.appId, MESSAGES);
  for (let round = 1; round <= MESSAGES / 2; round++) {
    await waitFor(() => held.length === 2, 20_000, `two requests held (round ${round})`);
    // no worker's claim takes a third while two are in flight
    expect(await claimableAt(h, ep.endpointId)).toEqual([]);
    for (const go of held.splice(0)) go();
  }
  await waitFor(async () => (await delivered(ep.endpointId)) === MESSAGES, 20_000, "all delivered");
  console.log(`max in-flight: peak concurrency at the receiver ${peak} (limit 2)`);
  expect(peak).toBe(2);
  expect(rx.on(ep.path)).toHaveLength(MESSAGES);
  await expectNoInFlightCounters(h.db.pool);
});

test("Retry-After: 2 pauses that endpoint for about 2 s and no other", async () => {
  const a = await makeEndpoint("retry-after", { maxInFlight: 1 });
  const b = await makeEndpoint("bystander", { maxInFlight: 1 });
  // B's requests (one at a time) wait for A's first, so B still has work during the pause
  let refused = () => {};
  const aRefused = new Promise<void>((r) => {
    refused = r;
  });
  handlers.set(a.path, (n) => {
    if (n > 0) return { status: 200 };
    refused();
    return { status: 429, headers: { "retry-after": "2" } };
  });
  handlers.set(b.path, async () => {
    await aRefused;
    return { status: 200 };
  });
  await enqueue(b.appId, 30);
  await enqueue(a.appId, 5);

  await waitFor(() => rx.on(a.path).length >= 1, 10_000, "A's first request");
  const first = rx.on(a.path)[0]!.at;
  // While paused, the health resource shows until when.
  let pausedUntil: string | null = null;
  await waitFor(
    async () => {
      const res = await h.call("GET", `${V1}/app/${a.appId}/endpoint/${a.endpointId}/health`);
      pausedUntil = res.body.pausedUntil;
      return pausedUntil !== null;
    },
    3_000,
    "pausedUntil in the health resource",
  );
  // The pause is the header's 2 s from the moment the 429 was recorded (one statement writes
  // the attempt and the pause, so both read the same now()).
  const { rows: pause } = await h.db.pool.query(
    `select (extract(epoch from h.paused_until - a.created_at) * 1000)::int as ms
     from attempts a join endpoint_health h using (endpoint_id)
     where a.endpoint_id = $1 and a.status_code = 429`,
    [a.endpointId],
  );
  expect(pause).toEqual([{ ms: 2_000 }]);
  // The claim takes none of A's rows to its last millisecond, and one (its in-flight
  // limit) once it is over.
  const { rows: end } = await h.db.pool.query(
    "select ceil(extract(epoch from paused_until) * 1000)::float8 as ms from endpoint_health where endpoint_id = $1",
    [a.endpointId],
  );
  const until = end[0].ms as number;
  // (the health resource shows it to the millisecond)
  expect(until - Date.parse(pausedUntil!)).toBeGreaterThanOrEqual(0);
  expect(until - Date.parse(pausedUntil!)).toBeLessThanOrEqual(1);
  expect(await claimableAt(h, a.endpointId, new Date(until - 1))).toEqual([]);
  expect(await claimableAt(h, a.endpointId, new Date(until))).toHaveLength(1);
  // B keeps going through the pause.
  await waitFor(() => rx.on(b.path).some((r) => r.at > first), 10_000, "B's requests meanwhile");

  // The pause, and the retry of the refused row it was set with, end now instead of in
  // 2 s (the claim reads both from the rows), and the workers are woken: A's next request
  // comes only after that (or after the pause's own end, should a slow machine get there
  // first).
  const ended = Date.now();
  await h.db.pool.query(
    "update endpoint_health set paused_until = now() where endpoint_id = $1 and paused_until > now()",
    [a.endpointId],
  );
  await h.db.pool.query(
    "update deliveries set next_attempt_at = now() where endpoint_id = $1 and status = 'failed' and next_attempt_at > now()",
    [a.endpointId],
  );
  await h.db.pool.query(`select pg_notify('${WORK_CHANNEL}', '')`);
  await waitFor(() => rx.on(a.path).length >= 2, 10_000, "A's next request");
  const next = rx.on(a.path)[1]!.at;
  const bDuring = rx.on(b.path).filter((r) => r.at > first && r.at < next).length;
  console.log(`Retry-After: B received ${bDuring} requests while A was paused`);
  expect(next).toBeGreaterThanOrEqual(Math.min(ended, until));
  expect(bDuring).toBeGreaterThanOrEqual(1);

  await waitFor(
    async () => (await delivered(a.endpointId)) === 5 && (await delivered(b.endpointId)) === 30,
    20_000,
    "everything delivered",
  );
  const { rows } = await h.db.pool.query(
    "select status_code from attempts where endpoint_id = $1 order by id",
    [a.endpointId],
  );
  expect(rows.map((r) => r.status_code)).toEqual([429, 200, 200, 200, 200, 200]);
  await expectNoInFlightCounters(h.db.pool);
});

test("reconcileInFlight repairs a corrupted in-flight counter", async () => {
  const ep = await makeEndpoint("drifted", { maxInFlight: 2 });
  // A counter stuck at the limit blocks the endpoint although nothing is in flight.
  await setInFlight(h.db.pool, [ep.endpointId], 2);
  await enqueue(ep.appId, 3);
  // no claim takes them while the counter says the endpoint is full
  expect(await claimableAt(h, ep.endpointId)).toEqual([]);
  expect(rx.on(ep.path)).toHaveLength(0);

  expect(await reconcileInFlight(h.db.pool)).toBe(1);
  await waitFor(
    async () => (await delivered(ep.endpointId)) === 3,
    10_000,
    "the endpoint to drain",
  );

  // And a counter below the truth (it would let too many through) is raised to it.
  await setInFlight(h.db.pool, [ep.endpointId], -3);
  expect(await reconcileInFlight(h.db.pool)).toBe(1);
  expect(await reconcileInFlight(h.db.pool)).toBe(0);
  await expectNoInFlightCounters(h.db.pool);
});

// Regression: finished requests used to wake the loop before their results were written
// (which is what frees the endpoint's in-flight room), so a claim found no room and the worker
// slept a whole poll interval: a backlog to one endpoint drained at maxInFlight per poll
// interval. The loop is now woken after every written batch. With a 60 s poll interval, a
// worker that relied on polling could not drain 80 rows (4 rounds of 20) in time.
test("a backlog to one endpoint drains without waiting for the poll interval", async () => {
  // Its own database: the worker processes of this file must not help.
  const h2 = await startHarness({ ssrfAllowlist: ["127.0.0.0/8"] });
  try {
    const app = await h2.call("POST", `${V1}/app`, { name: "poll" });
    const ep = await h2.call("POST", `${V1}/app/${app.body.id}/endpoint`, {
      url: `${rx.url}/poll`,
    });
    expect(ep.status).toBe(201);
    for (let i = 0; i < 80; i++) {
      await enqueueMessage(h2.db.pool, { appId: app.body.id, eventType: "p", payload: "{}" }, 5);
    }
    const t0 = Date.now();
    h2.startWorker({ pollIntervalMs: 60_000 });
    await waitFor(() => rx.on("/poll").length === 80, 30_000, "80 requests");
    console.log(
      `one endpoint (maxInFlight 20), 80 queued, poll 60 s: drained in ${Date.now() - t0} ms`,
    );
  } finally {
    await h2.close();
  }
});
