/**
 * Scenario 12: live delivery while a large bulk replay runs (docs/recovery.md). One
 * database holds the bench's endpoints and, in an app of its own, one endpoint with
 * 1,000,000 delivered deliveries of the last hour (seeded once with generate_series) and an
 * in-flight limit of 200, so the worker can keep up with the replay's pace. Each
 * run starts one worker process (which runs the replay runner too) and measures scenario
 * 3's live throughput twice: alone, then while a bulk replay of all those rows runs at
 * `--replay-rate` rows/s, sent to a small local receiver of its own, and then the replay for
 * 8 s (--quick: 1 s) with no live traffic. The figures: both live rates, their ratio
 * (target >= 0.8), the replay's rate while live traffic shares the worker (the claim's fair
 * share per endpoint puts live deliveries first) and its rate alone, against the pace it
 * was set.
 * The task is canceled at the end of each run, and its rows put back as delivered.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { withTransaction } from "../../src/db/pool.ts";
import { ID_PREFIX, newId } from "../../src/ids.ts";
import { cancelTask, createTask, getTask } from "../../src/ops/background-tasks.ts";
import { type BenchContext, deadlineFor, type FreshDb } from "../lib/context.ts";
import { startHookrelay, stopChild } from "../lib/procs.ts";
import { createTenants, EVENT_TYPE, makeMessages, seedMessages, type Tenant } from "../lib/seed.ts";
import { nowMs, ratePerSecond, waitUntil } from "../lib/stats.ts";

export interface ReplayData {
  db: FreshDb;
  tenants: Tenant[];
  replay: Tenant;
  rows: number;
  seedMs: number;
  /** the replay endpoint's receiver: answers 200 and counts */
  target: { server: http.Server; hits: number };
}

export interface ReplayRun {
  /** live deliveries per second with no replay */
  liveAlone: number;
  /** live deliveries per second while the replay runs */
  liveDuringReplay: number;
  ratio: number;
  /** replayed rows made due per second over the second measurement */
  replayRate: number;
  /** replayed requests the replay endpoint's receiver got meanwhile, per second */
  replayDeliveredRate: number;
  /** replayed rows made due per second afterwards, with no live traffic (the set pace) */
  replayAloneRate: number;
}

/** How long the replay runs with no live traffic, for its own rate (--quick: enough to see it run). */
const REPLAY_ALONE_MS = { full: 8_000, quick: 1_000 };

export async function prepareReplay(ctx: BenchContext): Promise<ReplayData> {
  const target = { server: http.createServer(), hits: 0 };
  target.server.on("request", (req, res) => {
    req.resume();
    req.on("end", () => {
      target.hits++;
      res.writeHead(200).end("ok");
    });
  });
  await new Promise<void>((r) => target.server.listen(0, "127.0.0.1", r));
  const port = (target.server.address() as AddressInfo).port;
  const db = await ctx.freshDb("replay");
  const tenants = await createTenants(db.pool, ctx.receiver.urls, ctx.secret);
  const replay: Tenant = {
    appId: newId(ID_PREFIX.app),
    appUid: "bench-replay",
    endpointId: newId(ID_PREFIX.endpoint),
    url: `http://127.0.0.1:${port}/replay`,
  };
  await db.pool.query(
    `with a as (insert into applications (id, uid, name) values ($1::text, $2::text, $2::text))
     insert into endpoints (id, app_id, url, max_in_flight) values ($3::text, $1::text, $4::text, 200)`,
    [replay.appId, replay.appUid, replay.endpointId, replay.url],
  );
  await db.pool.query(
    "insert into endpoint_secrets (endpoint_id, secret) values ($1::text, $2::text)",
    [replay.endpointId, ctx.secret],
  );
  const rows = ctx.opts.replayRows;
  const t0 = nowMs();
  await withTransaction(db.pool, async (client) => {
    // one message a few ms apart over the last hour, each delivered once
    await client.query(
      `insert into messages (id, app_id, event_type, payload, created_at)
       select 'msg_' || lpad(g::text, 22, '0'), $2::text, $3::text,
              '{"type":"order.paid","seq":' || g || '}',
              now() - interval '1 hour' + g * (interval '1 hour' / ($1::int + 1))
       from generate_series(1, $1::int) g`,
      [rows, replay.appId, EVENT_TYPE],
    );
    await client.query(
      `insert into deliveries (message_id, endpoint_id, app_id, status, attempt_count, max_attempts,
                               delivered_at, created_at, updated_at)
       select 'msg_' || lpad(g::text, 22, '0'), $2::text, $3::text, 'delivered', 1, 5,
              now(), now(), now()
       from generate_series(1, $1::int) g`,
      [rows, replay.endpointId, replay.appId],
    );
  });
  await db.pool.query("vacuum (analyze) messages, deliveries");
  return { db, tenants, replay, rows, seedMs: nowMs() - t0, target };
}

/** Live throughput of `n` messages spread over the bench endpoints, in deliveries/s. */
async function liveRate(ctx: BenchContext, d: ReplayData, n: number): Promise<number> {
  await ctx.receiver.reset();
  await seedMessages(d.db.pool, d.tenants, makeMessages(n, d.tenants.length));
  const s = await ctx.receiver.waitForHealthy(n, deadlineFor(n, 200));
  if (s.healthy < n) ctx.log(`  WARNING: only ${s.healthy}/${n} live deliveries in time`);
  return ratePerSecond(s.healthy, s.healthyFirst, s.healthyLast);
}

export async function measureReplay(ctx: BenchContext, d: ReplayData): Promise<ReplayRun> {
  const { opts } = ctx;
  await ctx.receiver.configure({ delayMs: 0, hanging: [], secret: ctx.secret });
  const worker = await startHookrelay("worker", d.db.url, {
    HOOKRELAY_WORKER_CONCURRENCY: String(opts.concurrency),
  });
  let taskId: string | null = null;
  try {
    // a fresh worker is slower at first (connections, JIT): warm it up before the first
    // measurement, or "alone" reads low and the ratio flatters the replay
    await liveRate(ctx, d, Math.min(opts.throughputMessages, 5_000));
    const liveAlone = await liveRate(ctx, d, opts.throughputMessages);
    const made = await createTask(d.db.pool, {
      kind: "endpoint.bulk-replay",
      appId: d.replay.appId,
      endpointId: d.replay.endpointId,
      since: new Date(Date.now() - 2 * 3_600_000),
      until: new Date(),
      filters: { statuses: ["delivered"] },
      dryRun: false,
      ratePerSecond: opts.replayRate,
      defaultRate: opts.replayRate,
      createdBy: "bench",
    });
    if (!made.ok) throw new Error(`a replay is running already: ${made.overlapping}`);
    const id = made.task.id;
    taskId = id;
    const done = async () => Number((await getTask(d.db.pool, id, null))?.done ?? 0);
    // the runner counts the window first, then sends: measure once it is sending
    await waitUntil(async () => (await done()) > 0, 120_000, 100);
    const done0 = await done();
    const hits0 = d.target.hits;
    const t0 = nowMs();
    const liveDuringReplay = await liveRate(ctx, d, opts.throughputMessages);
    const seconds = (nowMs() - t0) / 1000;
    const replayRate = ((await done()) - done0) / seconds;
    const replayDeliveredRate = (d.target.hits - hits0) / seconds;
    // then the replay with the worker to itself: does it keep the pace it was set?
    const done1 = await done();
    const t1 = nowMs();
    await new Promise((r) =>
      setTimeout(r, opts.quick ? REPLAY_ALONE_MS.quick : REPLAY_ALONE_MS.full),
    );
    const replayAloneRate = ((await done()) - done1) / ((nowMs() - t1) / 1000);
    ctx.log(
      `  live ${Math.round(liveAlone)}/s alone, ${Math.round(liveDuringReplay)}/s during a replay at ${Math.round(replayRate)}/s; the replay alone ${Math.round(replayAloneRate)}/s of ${opts.replayRate}/s set`,
    );
    return {
      liveAlone,
      liveDuringReplay,
      ratio: liveDuringReplay / liveAlone,
      replayRate,
      replayDeliveredRate,
      replayAloneRate,
    };
  } finally {
    if (taskId) await cancelTask(d.db.pool, taskId, null).catch(() => undefined);
    await stopChild(worker, 6_000);
    // the next run replays the same rows: put them back as they were
    await d.db.pool.query(
      `update deliveries set status = 'delivered', trigger = 'scheduled'
       where endpoint_id = $1::text and status <> 'delivered'`,
      [d.replay.endpointId],
    );
    await d.db.pool.query("delete from background_tasks");
    await ctx.receiver.reset();
  }
}

export async function dropReplay(d: ReplayData): Promise<void> {
  await new Promise<void>((r) => d.target.server.close(() => r()));
  await d.db.drop();
}
