/**
 * Adaptive concurrency (docs/adaptive-concurrency.md): each endpoint's in-flight limit
 * follows its answers within maxInFlight. End to end: the in-process API and one worker on
 * a test database, real receivers on 127.0.0.1 that count their own concurrent requests.
 * Every assertion is on counts (requests at once, timeouts, deliveries) and on the limit
 * and reason the health resource shows, never on how long something took.
 */

import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, expect, onTestFinished, test } from "vitest";
import { loadConfig } from "../src/config.ts";
import { claimDeliveries } from "../src/queue/claim-deliveries.ts";
import { type DeliveryResult, recordResults } from "../src/queue/record-results.ts";
import { dashboardClient } from "./helpers/dashboard-client.ts";
import {
  deliveryCalls,
  type ScriptedReceiver,
  sleep,
  startScriptedReceiver,
} from "./helpers/deliveries.ts";
import { successResult } from "./helpers/delivery-result.ts";
import { type Harness, startHarness } from "./helpers/harness.ts";
import { setInFlight } from "./helpers/in-flight.ts";
import type { Reply } from "./helpers/receiver.ts";
import { waitFor } from "./helpers/receiver.ts";

let h: Harness;
let rx: ScriptedReceiver;

beforeAll(async () => {
  h = await startHarness();
  rx = await startScriptedReceiver();
  h.startWorker();
});

afterAll(async () => {
  await h?.close();
  await rx?.close();
});

const { newApp, newEndpoint, send } = deliveryCalls(() => h);

/** A receiver path that counts its requests at once and answers by `reply(atOnce, n)`. */
function countingRoute(reply: (atOnce: number, n: number) => Reply | Promise<Reply>) {
  const seen = { now: 0, most: 0 };
  const path = rx.route(async (_req, n) => {
    seen.now++;
    seen.most = Math.max(seen.most, seen.now);
    try {
      return await reply(seen.now, n);
    } finally {
      seen.now--;
    }
  });
  return { path, seen };
}

async function sendMany(appId: string, n: number): Promise<void> {
  for (let i = 0; i < n; i += 20)
    await Promise.all(Array.from({ length: Math.min(20, n - i) }, () => send(appId)));
}

async function count(endpointId: string, where: string): Promise<number> {
  const { rows } = await h.db.pool.query(
    `select count(*)::int as n from deliveries where endpoint_id = $1 and ${where}`,
    [endpointId],
  );
  return rows[0].n;
}

async function timeouts(endpointId: string): Promise<number> {
  const { rows } = await h.db.pool.query(
    "select count(*)::int as n from attempts where endpoint_id = $1 and error_kind = 'timeout'",
    [endpointId],
  );
  return rows[0].n;
}

interface Concurrency {
  adaptive: boolean;
  current: number;
  max: number;
  reason: string;
  since: string | null;
}

async function concurrency(appId: string, endpointId: string): Promise<Concurrency> {
  const res = await h.call("GET", `/api/v1/app/${appId}/endpoint/${endpointId}/health`);
  expect(res.status).toBe(200);
  return res.body.limits.concurrency;
}

/** Samples the endpoint's limit every 25 ms until stopped (bounded: at most 2,000 reads). */
function watchLimit(appId: string, endpointId: string) {
  const seen: Concurrency[] = [];
  let stop = false;
  const done = (async () => {
    for (let i = 0; i < 2_000 && !stop; i++) {
      seen.push(await concurrency(appId, endpointId));
      await sleep(25);
    }
  })();
  return {
    seen,
    async stop() {
      stop = true;
      await done;
    },
  };
}

/** Latency as a function of the receiver's concurrent requests: 10 ms up to 4, then 50 ms more per request, at most 2 s. */
const climbingLatency = (atOnce: number) => Math.min(2_000, 10 + Math.max(0, atOnce - 4) * 50);

test("a receiver slowing down with its concurrency: the limit falls, timeouts stay rare, everything is delivered", async () => {
  const MESSAGES = 200;
  const { path, seen } = countingRoute(async (atOnce) => {
    await sleep(climbingLatency(atOnce));
    return { status: 200 };
  });
  const appId = await newApp();
  // at 44 requests at once an answer would take 2 s: the timeout
  const endpointId = await newEndpoint(appId, `${rx.url}${path}`, {
    maxInFlight: 50,
    timeoutMs: 2_000,
  });
  const watch = watchLimit(appId, endpointId);
  await sendMany(appId, MESSAGES);
  try {
    await waitFor(
      async () => (await count(endpointId, "status = 'delivered'")) === MESSAGES,
      60_000,
      "every message delivered",
    );
  } finally {
    await watch.stop();
  }
  const reasons = new Set(watch.seen.map((c) => c.reason));
  // it grew, then fell back when the answers slowed down
  expect(reasons.has("latency_rising")).toBe(true);
  const peak = Math.max(...watch.seen.map((c) => c.current));
  const afterPeak = watch.seen.slice(watch.seen.findIndex((c) => c.current === peak));
  expect(Math.min(...afterPeak.map((c) => c.current))).toBeLessThan(peak);
  // below the concurrency where answers take the timeout (slow start may overshoot the
  // knee for a round trip before the slow answers come back); a timeout or three at most
  expect(seen.most).toBeLessThan(44);
  expect(await timeouts(endpointId)).toBeLessThanOrEqual(3);
  expect(rx.on(path).length).toBeLessThanOrEqual(MESSAGES + 3);
  expect(watch.seen.every((c) => c.adaptive && c.max === 50 && c.current <= 50)).toBe(true);
});

test("steady fast answers grow the limit to maxInFlight; 429s cut it; the metrics and the dashboard show it", async () => {
  const MAX = 8;
  /** after `fastUntil` requests, the next `limited` are answered 429 (no Retry-After), then held */
  let fastUntil = Number.POSITIVE_INFINITY;
  const LIMITED = 6;
  const held: (() => void)[] = [];
  const { path, seen } = countingRoute(async (_atOnce, n) => {
    if (n < fastUntil) return { status: 200 };
    if (n < fastUntil + LIMITED) return { status: 429 };
    await new Promise<void>((resolve) => held.push(resolve));
    return { status: 200 };
  });
  const appId = await newApp();
  const endpointId = await newEndpoint(appId, `${rx.url}${path}`, {
    maxInFlight: MAX,
    maxAttempts: 20,
  });
  // a new endpoint starts at one request and grows from there
  expect(await concurrency(appId, endpointId)).toMatchObject({
    adaptive: true,
    current: 1,
    max: MAX,
    reason: "starting",
    since: null,
  });
  await sendMany(appId, 200);
  await waitFor(
    async () => (await concurrency(appId, endpointId)).reason === "at_max",
    30_000,
    "the limit to reach maxInFlight",
  );
  expect(await concurrency(appId, endpointId)).toMatchObject({ current: MAX, max: MAX });
  expect(seen.most).toBeLessThanOrEqual(MAX);

  // the next requests are answered 429, then held: the limit is cut to at most half
  fastUntil = rx.on(path).length;
  await waitFor(
    async () => (await concurrency(appId, endpointId)).reason === "rate_limited",
    30_000,
    "a 429 to cut the limit",
  );
  await waitFor(() => held.length > 0, 30_000, "a request after the 429s");
  await sleep(300); // (room for a claim that should not come)
  const cut = await concurrency(appId, endpointId);
  expect(cut.reason).toBe("rate_limited");
  expect(cut.current).toBeLessThanOrEqual(MAX / 2);
  // the held requests never outnumber the cut limit
  expect(held.length).toBeLessThanOrEqual(cut.current);
  expect(cut.since).not.toBeNull();

  // the dashboard's endpoint page and the metrics show the limit and why it moved
  const admin = dashboardClient(h.api);
  await admin.signIn(h.adminKey);
  expect((await admin.get(`/dashboard/endpoints/${endpointId}`)).body).toContain(
    `<span data-testid="concurrency">${cut.current} of ${MAX} (rate_limited since`,
  );
  const metrics = await h.api.inject({ method: "GET", url: "/metrics" });
  expect(metrics.statusCode).toBe(200);
  expect(metrics.body).toMatch(/^hookrelay_endpoints_concurrency\{reason="rate_limited"\} [1-9]/m);

  fastUntil = Number.POSITIVE_INFINITY;
  while (held.length > 0) held.shift()!();
  await waitFor(
    async () => (await count(endpointId, "status <> 'delivered'")) === 0,
    30_000,
    "every message delivered",
  );
  for (const release of held) release();
});

test("adaptiveConcurrency off: the old behaviour, maxInFlight at once from the first claim and no cut on latency", async () => {
  const MESSAGES = 30;
  const { path, seen } = countingRoute(async (atOnce) => {
    await sleep(climbingLatency(atOnce));
    return { status: 200 };
  });
  const appId = await newApp();
  const endpointId = await newEndpoint(appId, `${rx.url}${path}`, {
    maxInFlight: MESSAGES,
    timeoutMs: 10_000,
    adaptiveConcurrency: "off",
  });
  expect(await concurrency(appId, endpointId)).toMatchObject({
    adaptive: false,
    current: MESSAGES,
    reason: "at_max",
  });
  // every message is sent before the worker claims
  const appIds = await Promise.all(Array.from({ length: MESSAGES }, () => send(appId)));
  expect(appIds).toHaveLength(MESSAGES);
  await waitFor(
    async () => (await count(endpointId, "status = 'delivered'")) === MESSAGES,
    30_000,
    "every message delivered",
  );
  // well past the point where adaptive concurrency cuts (the test above never got here)
  expect(seen.most).toBeGreaterThan(10);
  expect(await concurrency(appId, endpointId)).toMatchObject({
    adaptive: false,
    current: MESSAGES,
    reason: "at_max",
  });
});

test("a timeout halves the limit once: a timeout of a request sent before the cut is not read again, one sent after cuts again; off, nothing is cut", async () => {
  const appId = await newApp();
  // disabled: their deliveries wait (whileDisabled hold) and no worker sends them; the
  // results below are written as a worker would, with tokens that move no row
  const on = await newEndpoint(appId, "http://127.0.0.1:9/on", { maxInFlight: 8, disabled: true });
  const off = await newEndpoint(appId, "http://127.0.0.1:9/off", {
    maxInFlight: 8,
    disabled: true,
    adaptiveConcurrency: "off",
  });
  await send(appId);
  const { rows: rowsOf } = await h.db.pool.query(
    "select id, endpoint_id, message_id, message_ms from deliveries where endpoint_id = any ($1::text[])",
    [[on, off]],
  );
  await h.db.pool.query(
    `update endpoint_health set concurrency_limit = 8, concurrency_reason = 'at_max',
       concurrency_since = now() - interval '1 minute' where endpoint_id = any ($1::text[])`,
    [[on, off]],
  );
  const timedOut = (endpointId: string, startedAt: Date): DeliveryResult => {
    const row = rowsOf.find((r) => r.endpoint_id === endpointId)!;
    return {
      deliveryId: row.id,
      messageMs: Number(row.message_ms),
      claimToken: randomUUID(),
      messageId: row.message_id,
      endpointId,
      appId,
      trigger: "scheduled",
      url: "http://127.0.0.1:9/",
      attemptNumber: 1,
      nextStatus: "failed",
      retryDelayMs: 1_000,
      startedAt,
      latencyMs: 2_000,
      success: false,
      statusCode: null,
      errorKind: "timeout",
      error: "timed out",
      responseBody: null,
      isProbe: false,
      pauseMs: null,
    };
  };
  const limitOf = async (endpointId: string) =>
    (
      await h.db.pool.query(
        "select concurrency_limit as limit, concurrency_reason as reason from endpoint_health where endpoint_id = $1",
        [endpointId],
      )
    ).rows[0];
  const write = (results: DeliveryResult[]) =>
    recordResults(h.db.pool, results, h.config.health, null, null, 8);

  const sentAt = new Date(Date.now() - 5_000);
  await write([timedOut(on, sentAt), timedOut(off, sentAt)]);
  expect(await limitOf(on)).toEqual({ limit: 4, reason: "timeouts" });
  expect(await limitOf(off)).toEqual({ limit: null, reason: "at_max" });
  // another request of the same round (sent before the cut) timing out is old news
  await write([timedOut(on, new Date(sentAt.getTime() + 100))]);
  expect(await limitOf(on)).toEqual({ limit: 4, reason: "timeouts" });
  // one sent after the cut (its answer came 2 s after it was sent) cuts again
  await write([timedOut(on, new Date(sentAt.getTime() + 2_500))]);
  expect(await limitOf(on)).toEqual({ limit: 2, reason: "timeouts" });
});

/**
 * Blocks this process's event loop (the worker's, the receivers' and the API's alike) for
 * `busyMs` in every turn of the loop, as a worker with far more work than CPU is: every
 * answer waits for the loop to come round, whatever its receiver did. Returns its stop.
 */
function blockEveryTurn(busyMs: number): () => void {
  let on = true;
  const turn = () => {
    if (!on) return;
    const until = performance.now() + busyMs;
    while (performance.now() < until) {
      // busy, on purpose
    }
    setImmediate(turn);
  };
  setImmediate(turn);
  return () => {
    on = false;
  };
}

/**
 * A receiver in a process of its own (a blocked loop here must not slow it down), on
 * 127.0.0.1: /steady answers 200 after 5 ms, always; /climb after 10 ms for its first
 * `warm` requests, then 40 ms more for each request after them, up to 3 s.
 */
async function startOutOfProcessReceiver(warm: number) {
  const script = `
    const http = require("node:http");
    let climbs = 0;
    const server = http.createServer((req, res) => {
      req.resume();
      req.on("end", () => {
        const ms = req.url.startsWith("/climb")
          ? Math.min(3000, 10 + 40 * Math.max(0, climbs++ - ${warm}))
          : 5;
        setTimeout(() => res.end("ok"), ms);
      });
    });
    server.listen(0, "127.0.0.1", () => console.log("port " + server.address().port));
    process.on("disconnect", () => process.exit(0));
  `;
  const child = spawn(process.execPath, ["-e", script], {
    stdio: ["ignore", "pipe", "inherit", "ipc"],
  });
  const port = await new Promise<number>((resolve, reject) => {
    let out = "";
    child.stdout!.on("data", (c: Buffer) => {
      out += c.toString();
      const m = /port (\d+)/.exec(out);
      if (m) resolve(Number(m[1]));
    });
    child.on("exit", (code) => reject(new Error(`receiver exited with ${code}`)));
  });
  return {
    url: `http://127.0.0.1:${port}`,
    stop() {
      child.kill("SIGTERM");
    },
  };
}

test("the worker's own lateness is not the receiver's: with its loop blocked on purpose, a receiver of constant latency keeps its limit; one whose latency climbs is still cut", async () => {
  const MAX = 20;
  const WARM = 40;
  const BLOCKED = 30;
  const rxOut = await startOutOfProcessReceiver(WARM);
  onTestFinished(() => rxOut.stop());
  const appId = await newApp();
  const steadyId = await newEndpoint(appId, `${rxOut.url}/steady`, {
    maxInFlight: MAX,
    timeoutMs: 10_000,
  });
  const climbingId = await newEndpoint(appId, `${rxOut.url}/climb`, {
    maxInFlight: MAX,
    timeoutMs: 10_000,
  });
  // each endpoint learns its latency floor on a free loop: a few milliseconds
  const delivered = (endpointId: string) => count(endpointId, "status = 'delivered'");
  await sendMany(appId, WARM);
  await waitFor(
    async () => (await delivered(steadyId)) === WARM && (await delivered(climbingId)) === WARM,
    30_000,
    "the first messages delivered",
  );
  const floorOf = async (endpointId: string) =>
    Number(
      (
        await h.db.pool.query(
          "select latency_floor_ms from endpoint_health where endpoint_id = $1",
          [endpointId],
        )
      ).rows[0].latency_floor_ms,
    );
  const steadyFloor = await floorOf(steadyId);
  expect(steadyFloor).toBeLessThan(100);
  // the steady endpoint's limit has been cut by nothing so far
  expect((await concurrency(appId, steadyId)).reason).not.toBe("latency_rising");
  const { rows: before } = await h.db.pool.query(
    "select coalesce(max(id), 0) as id from attempts where endpoint_id = $1",
    [steadyId],
  );

  // then the loop is late in every turn while BLOCKED more messages go to each
  const watchSteady = watchLimit(appId, steadyId);
  const watchClimbing = watchLimit(appId, climbingId);
  // 300 ms a turn: the answers measured late by far more than the rule tolerates (below),
  // even when a loaded machine slows the floor too (at 150 ms one loaded run measured 223
  // ms against the 260 the check asks)
  const unblock = blockEveryTurn(300);
  try {
    await sendMany(appId, BLOCKED);
    await waitFor(
      async () =>
        (await delivered(steadyId)) === WARM + BLOCKED &&
        (await delivered(climbingId)) === WARM + BLOCKED,
      90_000,
      "every message delivered",
    );
  } finally {
    unblock();
    await watchSteady.stop();
    await watchClimbing.stop();
  }
  // the steady receiver's answers, as measured, were slow enough to cut its limit had the
  // rule read them whole (tolerance: 2 x the floor and at least 250 ms more) ...
  const { rows: measured } = await h.db.pool.query(
    `select percentile_cont(0.5) within group (order by latency_ms)::float8 as p50
     from attempts where endpoint_id = $1 and id > $2`,
    [steadyId, before[0].id],
  );
  expect(measured[0].p50).toBeGreaterThan(Math.max(2 * steadyFloor, steadyFloor + 250));
  // ... but the loop's own lateness is not read as the receiver's: no latency cut
  expect(watchSteady.seen.some((c) => c.reason === "latency_rising")).toBe(false);
  expect((await concurrency(appId, steadyId)).reason).not.toBe("latency_rising");
  // while the receiver whose latency climbs with its load is still cut for it
  expect(watchClimbing.seen.some((c) => c.reason === "latency_rising")).toBe(true);
});

test("the rule reads an answer's latency less the worker's lateness meanwhile", async () => {
  const appId = await newApp();
  // disabled: no worker sends their deliveries; the results below are written as a worker
  // would, with tokens that move no row
  const late = await newEndpoint(appId, "http://127.0.0.1:9/late", {
    maxInFlight: 8,
    disabled: true,
  });
  const slow = await newEndpoint(appId, "http://127.0.0.1:9/slow", {
    maxInFlight: 8,
    disabled: true,
  });
  await send(appId);
  const { rows: rowsOf } = await h.db.pool.query(
    "select id, endpoint_id, message_id, message_ms from deliveries where endpoint_id = any ($1::text[])",
    [[late, slow]],
  );
  await h.db.pool.query(
    `update endpoint_health set concurrency_limit = 8, concurrency_reason = 'at_max',
       concurrency_since = now() - interval '1 minute', latency_floor_ms = 10
     where endpoint_id = any ($1::text[])`,
    [[late, slow]],
  );
  await setInFlight(h.db.pool, [late, slow], 8);
  const answered = (
    endpointId: string,
    latencyMs: number,
    workerLateMs: number,
  ): DeliveryResult => {
    const row = rowsOf.find((r) => r.endpoint_id === endpointId)!;
    return {
      deliveryId: row.id,
      messageMs: Number(row.message_ms),
      claimToken: randomUUID(),
      messageId: row.message_id,
      endpointId,
      appId,
      trigger: "scheduled",
      url: "http://127.0.0.1:9/",
      attemptNumber: 1,
      nextStatus: "delivered",
      retryDelayMs: 0,
      startedAt: new Date(Date.now() - 1_000),
      latencyMs,
      workerLateMs,
      success: true,
      statusCode: 200,
      errorKind: null,
      error: null,
      responseBody: null,
      isProbe: false,
      pauseMs: null,
    };
  };
  // both measured 600 ms against a floor of 10 ms: one while the worker's loop was late
  // for 590 of them (the receiver's share: 10 ms), the other with the loop on time
  await recordResults(
    h.db.pool,
    [answered(late, 600, 590), answered(slow, 600, 0)],
    h.config.health,
    null,
    null,
    8,
  );
  const { rows } = await h.db.pool.query(
    `select endpoint_id, concurrency_limit::float8 as limit, concurrency_reason as reason
     from endpoint_health where endpoint_id = any ($1::text[])`,
    [[late, slow]],
  );
  const of = (id: string) => rows.find((r) => r.endpoint_id === id);
  expect(of(late).reason).not.toBe("latency_rising");
  expect(of(late).limit).toBeGreaterThanOrEqual(8);
  expect(of(slow).reason).toBe("latency_rising");
  expect(of(slow).limit).toBeLessThan(8);
});

test("a broker endpoint's limit starts at its maxInFlight and is not cut for latency; a timeout still cuts it", async () => {
  const appId = await newApp();
  // disabled: no worker sends their deliveries; a claim below enables them in a
  // transaction it rolls back, and results are written as a worker would, with tokens
  // that move no row
  const broker = await newEndpoint(appId, "http://127.0.0.1:9/broker", {
    maxInFlight: 8,
    disabled: true,
  });
  const web = await newEndpoint(appId, "http://127.0.0.1:9/web", {
    maxInFlight: 8,
    disabled: true,
  });
  await h.db.pool.query(
    "update endpoints set destination_kind = 'nats', url = 'nats://127.0.0.1:9/?subject=x' where id = $1",
    [broker],
  );
  await sendMany(appId, 10);
  // nothing learned yet: the broker's at maxInFlight, the web endpoint's at 1
  expect(await concurrency(appId, broker)).toMatchObject({ current: 8, reason: "starting" });
  expect(await concurrency(appId, web)).toMatchObject({ current: 1, reason: "starting" });
  // and the claim takes that many
  const claimedOf: Record<string, number> = {};
  const client = await h.db.pool.connect();
  try {
    await client.query("begin");
    await client.query("update endpoints set disabled = false where id = any ($1::text[])", [
      [broker, web],
    ]);
    const rows = await claimDeliveries(client, {
      workerId: "test",
      workerLock: null,
      claimToken: randomUUID(),
      limit: 100,
      defaultMaxInFlight: h.config.delivery.maxInFlight,
      defaultAdaptiveConcurrency: "on",
      defaultTimeoutMs: h.config.delivery.timeoutMs,
      leaseMarginMs: h.config.worker.leaseMarginMs,
    });
    for (const r of rows) claimedOf[r.endpointId] = (claimedOf[r.endpointId] ?? 0) + 1;
  } finally {
    await client.query("rollback");
    client.release();
  }
  expect(claimedOf).toEqual({ [broker]: 8, [web]: 1 });

  const { rows: rowsOf } = await h.db.pool.query(
    "select id, endpoint_id, message_id, message_ms from deliveries where endpoint_id = any ($1::text[])",
    [[broker, web]],
  );
  await h.db.pool.query(
    `update endpoint_health set concurrency_limit = 8, concurrency_reason = 'at_max',
       concurrency_since = now() - interval '1 minute', latency_floor_ms = 10
     where endpoint_id = any ($1::text[])`,
    [[broker, web]],
  );
  await setInFlight(h.db.pool, [broker, web], 8);
  const result = (endpointId: string, changes: Partial<DeliveryResult>) => {
    const row = rowsOf.find((r) => r.endpoint_id === endpointId)!;
    return successResult({
      deliveryId: row.id,
      messageMs: Number(row.message_ms),
      claimToken: randomUUID(),
      messageId: row.message_id,
      endpointId,
      appId,
      startedAt: new Date(Date.now() - 5_000),
      ...changes,
    });
  };
  const limitOf = async (endpointId: string) =>
    (
      await h.db.pool.query(
        "select concurrency_limit::float8 as limit, concurrency_reason as reason from endpoint_health where endpoint_id = $1",
        [endpointId],
      )
    ).rows[0];
  const write = (results: DeliveryResult[]) =>
    recordResults(h.db.pool, results, h.config.health, null, null, 8);
  // confirms 60 x slower than the floor: the web endpoint is cut, the broker is not
  await write([result(broker, { latencyMs: 600 }), result(web, { latencyMs: 600 })]);
  expect(await limitOf(web)).toMatchObject({ reason: "latency_rising" });
  expect((await limitOf(web)).limit).toBeLessThan(8);
  expect(await limitOf(broker)).toEqual({ limit: 8, reason: "at_max" });
  // a publish that timed out still halves it
  await write([
    result(broker, {
      startedAt: new Date(),
      latencyMs: 2_000,
      success: false,
      nextStatus: "failed",
      retryDelayMs: 1_000,
      statusCode: null,
      errorKind: "timeout",
      error: "timed out",
    }),
  ]);
  expect(await limitOf(broker)).toEqual({ limit: 4, reason: "timeouts" });
});

test("HOOKRELAY_ADAPTIVE_CONCURRENCY is on by default, takes on and off, and refuses anything else", () => {
  expect(loadConfig({}).health.adaptiveConcurrency).toBe("on");
  expect(loadConfig({ HOOKRELAY_ADAPTIVE_CONCURRENCY: "off" }).health.adaptiveConcurrency).toBe(
    "off",
  );
  expect(() => loadConfig({ HOOKRELAY_ADAPTIVE_CONCURRENCY: "yes" })).toThrow(
    /HOOKRELAY_ADAPTIVE_CONCURRENCY must be on or off/,
  );
});
