/**
 * Scenario 4: open-loop latency through the HTTP API. Messages are POSTed to
 * /api/v1/app/{app}/msg at a fixed rate (each at its scheduled time, whether or not earlier
 * requests have finished) to an API process, and one worker process delivers them.
 *
 * enqueue-to-delivery = receiver timestamp - the message's `timestamp` in the 202 answer
 * (its created_at: the API's accept time, in ms). Also kept: schedule-to-delivery (from the
 * time the client was due to send) and the API's own response time.
 */

import { Pool } from "undici";
import { createApiKey } from "../../src/api/auth.ts";
import { type BenchContext, deadlineFor } from "../lib/context.ts";
import { type CpuSpent, perThousand, startCpuMeter } from "../lib/cpu.ts";
import { type HookrelayProcess, startHookrelay, stopChild } from "../lib/procs.ts";
import { createTenants, EVENT_TYPE, payloadFor, type Tenant } from "../lib/seed.ts";
import { nowMs, percentile, sleep } from "../lib/stats.ts";

export interface LatencyRun {
  p50: number;
  p95: number;
  p99: number;
  max: number;
  /** from the scheduled send time (includes the API's own time) */
  scheduledP50: number;
  scheduledP99: number;
  /** API response time as the client saw it */
  apiP50: number;
  apiP99: number;
  sent: number;
  accepted: number;
  delivered: number;
  errors: number;
  /** messages per second actually offered */
  offeredRate: number;
  /** from the database: accept (created_at) to the attempt's start, i.e. queue wait + claim */
  queueP50: number;
  queueP99: number;
  /** CPU ms per 1,000 messages by process (the load generator is "client"), and the steal */
  cpuPerThousand: CpuSpent;
}

interface Sent {
  scheduled: number;
  accepted: number;
  answered: number;
}

export async function runLatency(ctx: BenchContext): Promise<LatencyRun> {
  const { receiver, opts } = ctx;
  const db = await ctx.freshDb("latency");
  const procs: HookrelayProcess[] = [];
  let client: Pool | null = null;
  try {
    const tenants = await createTenants(db.pool, receiver.urls, ctx.secret);
    const { key } = await createApiKey(db.pool, { role: "admin" }, "bench");
    await receiver.configure({ secret: ctx.secret });
    procs.push(
      ...(await Promise.all([
        startHookrelay("api", db.url),
        startHookrelay("worker", db.url, {
          HOOKRELAY_WORKER_CONCURRENCY: String(opts.concurrency),
        }),
      ])),
    );
    const apiUrl = procs[0]!.url!;
    const api = new Pool(apiUrl, { connections: 64, keepAliveTimeout: 10_000 });
    client = api;
    const headers = { authorization: `Bearer ${key}`, "content-type": "application/json" };

    const sent = new Map<string, Sent>();
    let errors = 0;
    const post = (i: number, tenant: Tenant, scheduled: number, record: boolean) =>
      api
        .request({
          path: `/api/v1/app/${tenant.appId}/msg`,
          method: "POST",
          headers,
          body: `{"eventType":"${EVENT_TYPE}","payload":${payloadFor(i)}}`,
          signal: AbortSignal.timeout(30_000),
        })
        .then(async (res) => {
          const text = await res.body.text();
          const answered = Date.now();
          if (res.statusCode !== 202) {
            errors++;
            return;
          }
          const body = JSON.parse(text) as { id: string; timestamp: string };
          if (record)
            sent.set(body.id, { scheduled, accepted: Date.parse(body.timestamp), answered });
        })
        .catch(() => {
          errors++;
        });

    // Open loop at `rate` for `seconds`: request i is due at t0 + i / rate.
    async function offer(rate: number, seconds: number, record: boolean, offset: number) {
      const total = Math.round(rate * seconds);
      const inflight: Promise<void>[] = [];
      const t0 = nowMs();
      // Schedules are compared with the receiver's arrival times: both on the wall clock.
      const wallT0 = Date.now();
      let i = 0;
      while (i < total) {
        const due = Math.min(total, Math.floor(((nowMs() - t0) * rate) / 1000) + 1);
        for (; i < due; i++) {
          inflight.push(
            post(offset + i, tenants[i % tenants.length]!, wallT0 + (i * 1000) / rate, record),
          );
        }
        if (nowMs() - t0 > seconds * 1000 + 5_000) break; // bounded even if the loop stalls
        await sleep(1);
      }
      const offeredMs = nowMs() - t0;
      await Promise.race([Promise.all(inflight), sleep(35_000)]);
      return { sent: i, offeredRate: (i * 1000) / Math.max(1, offeredMs) };
    }

    // Warm-up: connections, prepared statements, JIT of the hot paths.
    const warm = await offer(opts.latencyRate, opts.latencyWarmupSeconds, false, 0);
    await receiver.waitForHealthy(warm.sent - errors, 15_000);
    // A running deployment's tables have statistics (autovacuum analyzes them a minute or
    // so after they change); this database is seconds old. Without them the planner may
    // probe each endpoint's due rows through the wrong index once the due index has grown
    // with dead entries, and claims then read every row the endpoint ever had (seen: p50
    // 94 ms instead of 25 ms). So the warmed-up tables are analyzed, as autovacuum would.
    await db.pool.query("analyze");
    await receiver.configure({ secret: ctx.secret, record: true });
    await receiver.reset();
    errors = 0;

    ctx.log(`  offering ${opts.latencyRate} msg/s for ${opts.latencySeconds} s`);
    const cpu = startCpuMeter({
      api: () => [procs[0]!.pid],
      worker: () => [procs[1]!.pid],
      postgres: () => ctx.cluster.pids(),
      receiver: () => [receiver.pid],
      client: () => [process.pid],
    });
    const run = await offer(opts.latencyRate, opts.latencySeconds, true, 1_000_000);
    const s = await receiver.waitForHealthy(sent.size, deadlineFor(sent.size, 200, 15_000));
    const spent = cpu();
    const { ids, at } = await receiver.records();

    const e2e: number[] = [];
    const scheduled: number[] = [];
    const apiTimes: number[] = [];
    for (const v of sent.values()) apiTimes.push(v.answered - v.scheduled);
    ids.forEach((id, k) => {
      const m = sent.get(id);
      if (!m) return;
      e2e.push(at[k]! - m.accepted);
      scheduled.push(at[k]! - m.scheduled);
    });
    // A message cannot arrive before it was accepted; a few such samples mean the clocks of
    // the processes disagree and the figures are void.
    const beforeAccept = e2e.filter((ms) => ms < -2).length;
    if (beforeAccept > 0)
      ctx.log(
        `  WARNING: ${beforeAccept} messages arrived before their accept time: clocks disagree`,
      );
    const r = (v: number) => Math.round(v * 10) / 10;
    // Where the time goes: accept -> attempt start (waiting for NOTIFY, claim) as recorded.
    const stages = await db.pool.query(
      `select percentile_cont(0.5) within group (order by w) as p50, percentile_cont(0.99) within group (order by w) as p99
       from (select extract(epoch from a.started_at - m.created_at) * 1000 as w
             from attempts a join messages m on m.id = a.message_id where m.id = any ($1::text[])) x`,
      [[...sent.keys()]],
    );
    return {
      p50: r(percentile(e2e, 50)),
      p95: r(percentile(e2e, 95)),
      p99: r(percentile(e2e, 99)),
      max: r(percentile(e2e, 100)),
      scheduledP50: r(percentile(scheduled, 50)),
      scheduledP99: r(percentile(scheduled, 99)),
      apiP50: r(percentile(apiTimes, 50)),
      apiP99: r(percentile(apiTimes, 99)),
      sent: run.sent,
      accepted: sent.size,
      delivered: s.healthy,
      errors,
      offeredRate: Math.round(run.offeredRate),
      queueP50: r(Number(stages.rows[0]?.p50)),
      queueP99: r(Number(stages.rows[0]?.p99)),
      cpuPerThousand: perThousand(spent, sent.size),
    };
  } finally {
    await client?.close();
    await Promise.all(procs.map((p) => stopChild(p, 6_000)));
    await receiver.configure({});
    await receiver.reset();
    await db.drop();
  }
}
