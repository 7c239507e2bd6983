/**
 * hookrelay delivering a seeded backlog: scenarios 3 (throughput, 1 and 2 workers), 6 (slow
 * receiver), 7 (isolation: some endpoints hang), 9 (peak RSS of the workers during 3) and
 * 10 (scenario 3's single worker run from the TypeScript source instead of dist/).
 *
 * Worker processes (`node dist/cli/main.js worker`) start first and idle; then the messages
 * and deliveries are inserted in one transaction (with the NOTIFY enqueueMessage sends), so
 * every worker sees the whole backlog at once. The rate is taken from the receiver's first
 * to its last healthy request. Afterwards the database must hold one `delivered` row and one
 * attempt row per delivery: the run was fully durable.
 */

import type { Pool } from "../../src/db/pool.ts";
import { type BenchContext, deadlineFor } from "../lib/context.ts";
import { type CpuSpent, perThousand, startCpuMeter } from "../lib/cpu.ts";
import { logEndpointLimits } from "../lib/endpoint-limits.ts";
import { formatPgCpuByKind, startPgCpuByKind } from "../lib/pg-cpu-kinds.ts";
import {
  type HookrelayProcess,
  type HookrelayRuntime,
  peakRssMiB,
  startHookrelay,
  stopChild,
} from "../lib/procs.ts";
import {
  createTenants,
  deliveryCounts,
  type Messages,
  makeMessages,
  seedMessages,
} from "../lib/seed.ts";
import { nowMs, ratePerSecond, waitUntil } from "../lib/stats.ts";

export interface DeliveryParams {
  workers: number;
  messages: number;
  /** receiver answers after this delay */
  delayMs?: number;
  /** endpoint indexes that never answer */
  hanging?: number[];
  /** every endpoint's timeoutMs (null = server default 15 s) */
  timeoutMs?: number | null;
  /** compiled (default) or TypeScript source */
  runtime?: HookrelayRuntime;
  /** scenario 13: this many ordering keys (bench/lib/seed.ts makeMessages spreads them) */
  orderingKeys?: number;
  /** stop waiting after this long and take the rate of what arrived (default: deadlineFor) */
  maxWaitMs?: number;
  /** scenario 14: more environment for the worker processes (HOOKRELAY_ADAPTIVE_CONCURRENCY) */
  env?: Record<string, string>;
  /**
   * scenario 15: every message carries a producer's traceparent and every endpoint
   * propagates it (propagateTrace on)
   */
  traced?: boolean;
}

export interface DeliveryRun {
  /** healthy deliveries per second, first to last healthy request at the receiver */
  rate: number;
  healthy: number;
  expectedHealthy: number;
  seedMs: number;
  /** VmHWM of each worker process, MiB */
  peakRssMiB: number[];
  unsigned: number;
  badSignature: number;
  verified: number;
  /**
   * CPU time from the end of the seeding to the last healthy request, in ms per 1,000
   * healthy deliveries, by process group, and the share of the machine stolen meanwhile
   */
  cpuPerThousand: CpuSpent;
  /** database state after the run (fast-receiver runs only) */
  delivered: number | null;
  attempts: number | null;
  /** ordered runs: requests that arrived before an earlier message of their key */
  orderViolations?: number;
  /** ordered runs: median attempt latency_ms the worker recorded (the receiver's answer time) */
  attemptLatencyP50Ms?: number;
}

export async function runDelivery(ctx: BenchContext, p: DeliveryParams): Promise<DeliveryRun> {
  const { receiver, opts } = ctx;
  const hanging = new Set(p.hanging ?? []);
  const db = await ctx.freshDb(`hr_w${p.workers}`);
  const workers: HookrelayProcess[] = [];
  try {
    const tenants = await createTenants(db.pool, receiver.urls, ctx.secret, p.timeoutMs ?? null);
    if (p.traced) await db.pool.query("update endpoints set propagate_trace = 'on'");
    const messages = makeMessages(p.messages, tenants.length, 0, p.orderingKeys ?? null);
    const expectedHealthy = messages.endpoint.filter((e) => !hanging.has(e)).length;
    await receiver.configure({
      delayMs: p.delayMs ?? 0,
      hanging: [...hanging],
      secret: ctx.secret,
      record: messages.keys !== undefined,
    });
    workers.push(
      ...(await Promise.all(
        Array.from({ length: p.workers }, () =>
          startHookrelay(
            "worker",
            db.url,
            { HOOKRELAY_WORKER_CONCURRENCY: String(opts.concurrency), ...p.env },
            p.runtime,
          ),
        ),
      )),
    );
    await receiver.reset();

    const t0 = nowMs();
    await seedMessages(db.pool, tenants, messages, 5, { traced: p.traced ?? false });
    const seedMs = nowMs() - t0;
    const cpu = startCpuMeter({
      worker: () => workers.map((w) => w.pid),
      postgres: () => ctx.cluster.pids(),
      receiver: () => [receiver.pid],
    });
    const pgKinds = startPgCpuByKind(() => ctx.cluster.pids(), db.pool);
    ctx.log(
      `  seeded ${p.messages} messages in ${Math.round(seedMs)} ms; ${p.workers} worker(s) delivering`,
    );

    const minRate = p.delayMs ? 100 : 300;
    const s = await receiver.waitForHealthy(
      expectedHealthy,
      Math.min(deadlineFor(expectedHealthy, minRate), p.maxWaitMs ?? Number.POSITIVE_INFINITY),
    );
    const spent = cpu();
    ctx.log(
      `  PostgreSQL CPU per 1,000 by process: ${formatPgCpuByKind(await pgKinds(), s.healthy)}`,
    );
    const rss = workers.map((w) => peakRssMiB(w.pid));
    if (s.healthy < expectedHealthy && p.maxWaitMs === undefined) {
      ctx.log(
        `  WARNING: only ${s.healthy}/${expectedHealthy} healthy deliveries before the deadline`,
      );
      for (const w of workers) ctx.log(`  worker ${w.pid} said:\n${w.output()}`);
    }

    let delivered: number | null = null;
    let attempts: number | null = null;
    const ordered = messages.keys ? await orderFigures(ctx, db.pool, messages) : {};
    if (hanging.size === 0 && !p.delayMs && s.healthy >= expectedHealthy) {
      // Results are written back in batches shortly after the last request.
      await waitUntil(
        async () => (await deliveryCounts(db.pool)).delivered >= p.messages,
        15_000,
        100,
      );
      const counts = await deliveryCounts(db.pool);
      delivered = counts.delivered;
      attempts = counts.attempts;
    }
    // scenario 14: where the limiter left each endpoint (its cost is what it held back)
    if (p.env?.HOOKRELAY_ADAPTIVE_CONCURRENCY === "on") await logEndpointLimits(ctx, db.pool);
    return {
      rate: ratePerSecond(s.healthy, s.healthyFirst, s.healthyLast),
      healthy: s.healthy,
      expectedHealthy,
      seedMs,
      peakRssMiB: rss,
      cpuPerThousand: perThousand(spent, s.healthy),
      unsigned: s.unsigned,
      badSignature: s.badSignature,
      verified: s.verified,
      delivered,
      attempts,
      ...ordered,
    };
  } finally {
    await Promise.all(workers.map((w) => stopChild(w, 6_000)));
    await receiver.reset();
    await db.drop();
  }
}

/**
 * Checks each key's receipt order against its send order (a key's messages must arrive with
 * increasing indexes: their delivery ids follow them) and reads the attempts' median latency.
 */
async function orderFigures(
  ctx: BenchContext,
  pool: Pool,
  m: Messages,
): Promise<{ orderViolations: number; attemptLatencyP50Ms: number }> {
  const index = new Map(m.ids.map((id, i) => [id, i]));
  const last = new Map<string, number>();
  let orderViolations = 0;
  for (const id of (await ctx.receiver.records()).ids) {
    const i = index.get(id);
    const key = i === undefined ? undefined : m.keys?.[i];
    if (i === undefined || key === undefined) continue;
    if ((last.get(key) ?? -1) > i) orderViolations++;
    else last.set(key, i);
  }
  const { rows } = await pool.query(
    "select percentile_disc(0.5) within group (order by latency_ms)::float8 as p50 from attempts",
  );
  return { orderViolations, attemptLatencyP50Ms: rows[0].p50 ?? Number.NaN };
}
