/**
 * Scenario 20: the soak (docs/performance.md). An API process takes `--soak-rate` messages a
 * second (open loop, one POST each) for `--soak-seconds`, while one worker delivers them
 * with hourly attempt partitions, short retention and maintenance every 10 s, so partition
 * creation and retention really run inside the window:
 *
 * - before the start, the window is filled: history at the same rate over the retention age,
 *   so the tables are as full as they will stay from the first sample;
 * - the retention age is chosen so that the oldest hourly partition with rows comes due
 *   half-way through, and the partitions' look-ahead so that a new one is made then too.
 *
 * Every `--soak-sample` seconds it samples the deliveries per second at the receiver, the
 * worker's and the API's RSS, the history tables' size, their dead tuples (all, and those
 * past autovacuum's trigger) and autovacuum runs; at the end it says of each whether it stayed flat (bench/lib/flat.ts).
 */
import { readFileSync } from "node:fs";
import { Pool as HttpPool } from "undici";
import { createApiKey } from "../../src/api/auth.ts";
import {
  dropAttemptPartitionsBefore,
  listAttemptPartitions,
} from "../../src/ops/attempt-partitions.ts";
import {
  dropMessagePartitionsBefore,
  ensureHistoryPartitions,
} from "../../src/ops/message-partitions.ts";
import type { BenchContext } from "../lib/context.ts";
import { type Flatness, flatness } from "../lib/flat.ts";
import { historySizes, leavesOf, seedSpan } from "../lib/history-seed.ts";
import { startHookrelay, stopChild } from "../lib/procs.ts";
import { createTenants, EVENT_TYPE, payloadFor } from "../lib/seed.ts";
import { nowMs, sleep } from "../lib/stats.ts";

const HOUR = 3_600_000;

export interface SoakSample {
  /** seconds since the start */
  t: number;
  deliveredPerSecond: number;
  workerRssMiB: number;
  apiRssMiB: number;
  /** messages + deliveries + attempts, tables and indexes */
  historyMiB: number;
  attemptsMiB: number;
  deadTuples: number;
  /** dead tuples past the point where autovacuum should have vacuumed their table */
  deadPastTrigger: number;
  autovacuums: number;
  attemptPartitions: number;
}

export interface SoakRun {
  seconds: number;
  offeredRate: number;
  /** the retention age and partition look-ahead the worker ran with */
  retentionMs: number;
  aheadMs: number;
  samples: SoakSample[];
  verdicts: Flatness[];
  /** attempt partitions that appeared and went during the window */
  partitionsCreated: string[];
  partitionsDropped: string[];
  accepted: number;
  errors: number;
}

const rssMiB = (pid: number): number => {
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    return Number(/^VmRSS:\s+(\d+)\s+kB/m.exec(status)?.[1]) / 1024;
  } catch {
    return Number.NaN;
  }
};

export async function runSoak(ctx: BenchContext): Promise<SoakRun> {
  const { opts, receiver } = ctx;
  const seconds = opts.soakSeconds;
  const rate = opts.soakRate;
  const db = await ctx.freshDb("soak");
  const pool = db.pool;
  const start = Date.now();
  const mid = start + (seconds * 1000) / 2;
  // the partition [H - 1 h, H) comes due at mid: retention age = mid - H, at least 30 min
  let boundary = mid - (mid % HOUR);
  if (mid - boundary < HOUR / 2) boundary -= HOUR;
  const retentionMs = mid - boundary;
  // now + ahead crosses the hour after mid at mid: a new partition is made then
  const aheadMs = boundary + 2 * HOUR - mid;
  const procs: Awaited<ReturnType<typeof startHookrelay>>[] = [];
  let http: HttpPool | null = null;
  try {
    const tenants = await createTenants(pool, receiver.urls, ctx.secret);
    const from = start - retentionMs;
    // hourly periods for all three tables from the window's start. The template's periods
    // are days (bench/lib/cluster.ts, a server's defaults): today's would hold the whole
    // soak, so no period would be made or dropped meanwhile and the tables would only grow.
    // They are empty here; dropped first.
    await dropAttemptPartitionsBefore(pool, start + 4 * 24 * HOUR);
    await dropMessagePartitionsBefore(pool, start + 4 * 24 * HOUR, 0);
    await ensureHistoryPartitions(
      pool,
      {
        partitions: { interval: "hour", aheadMs: 2 * HOUR },
        retention: {
          attemptsMs: retentionMs,
          payloadMs: retentionMs,
          deadLetterMs: retentionMs,
          batch: 2_000,
        },
      },
      from,
    );
    // the window, full: the same rate over the retention age, in spans of at most an hour
    // (--quick: a message a second, the harness's proof only)
    const fillRate = opts.quick ? 1 : rate;
    for (let t = from, k = 0; t < start; t += HOUR, k++) {
      const to = Math.min(start, t + HOUR);
      const messages = Math.max(1, Math.round(((to - t) / 1000) * fillRate));
      await seedSpan(pool, tenants, {
        fromMs: t,
        toMs: to,
        messages,
        attemptsPerMessage: 1,
        firstEventNumber: k * 10_000_000,
      });
    }
    await pool.query("vacuum (analyze) messages, deliveries, attempts");
    ctx.log(
      `20 soak: window of ${Math.round(retentionMs / 60_000)} min seeded; partitions ${Math.round(aheadMs / 60_000)} min ahead`,
    );
    const env = {
      HOOKRELAY_PARTITION_INTERVAL: "hour",
      HOOKRELAY_PARTITIONS_AHEAD_MS: String(Math.round(aheadMs)),
      HOOKRELAY_RETENTION_ATTEMPTS_MS: String(Math.round(retentionMs)),
      HOOKRELAY_RETENTION_PAYLOAD_MS: String(Math.round(retentionMs)),
      HOOKRELAY_RETENTION_DEAD_LETTER_MS: String(Math.round(retentionMs)),
      HOOKRELAY_MAINTENANCE_INTERVAL_MS: opts.quick ? "500" : "10000",
      HOOKRELAY_WORKER_CONCURRENCY: String(opts.concurrency),
    };
    await receiver.configure({ delayMs: 0, hanging: [], secret: ctx.secret, record: false });
    await receiver.reset();
    // before the processes start: a short --quick window is past its middle by then, so
    // their first maintenance run already creates and drops
    const partitionNames = async () =>
      new Set((await listAttemptPartitions(pool)).map((p) => p.name));
    const atStart = await partitionNames();
    const seen = new Set(atStart);
    const worker = await startHookrelay("worker", db.url, env);
    procs.push(worker);
    const api = await startHookrelay("api", db.url, env);
    procs.push(api);
    const { key } = await createApiKey(pool, { role: "admin" }, "soak");
    const client = new HttpPool(api.url!, { connections: 128, keepAliveTimeout: 10_000 });
    http = client;
    let accepted = 0;
    let errors = 0;
    const t0 = nowMs();
    const end = t0 + seconds * 1000;
    // open loop: message i is sent at t0 + i / rate, whether or not earlier ones were answered
    const producer = (async () => {
      const inFlight = new Set<Promise<void>>();
      for (let i = 0; ; i++) {
        const at = t0 + (i * 1000) / rate;
        if (at >= end) break;
        const wait = at - nowMs();
        if (wait > 0) await sleep(wait);
        const tenant = tenants[i % tenants.length]!;
        const p = client
          .request({
            path: `/api/v1/app/${tenant.appId}/msg`,
            method: "POST",
            headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
            body: `{"eventType":"${EVENT_TYPE}","payload":${payloadFor(i)}}`,
            signal: AbortSignal.timeout(30_000),
          })
          .then(async (res) => {
            await res.body.dump();
            if (res.statusCode === 202) accepted++;
            else errors++;
          })
          .catch(() => {
            errors++;
          })
          .finally(() => inFlight.delete(p));
        inFlight.add(p);
        // bounded: a stalled API does not pile up unbounded requests
        if (inFlight.size >= 1_000) await Promise.race(inFlight);
      }
      await Promise.all(inFlight);
    })();

    const samples: SoakSample[] = [];
    let lastHealthy = 0;
    let lastAt = t0;
    while (nowMs() < end) {
      await sleep(Math.min(opts.soakSampleSeconds * 1000, Math.max(0, end - nowMs())));
      const now = nowMs();
      const stats = await receiver.stats();
      const sizes = await historySizes(pool);
      const mib = (b: number) => b / 1_048_576;
      // autovacuum vacuums a table once its dead tuples pass threshold + scale factor x
      // its row count (no table here sets its own): a table that fills (this hour's period)
      // is vacuumed at ever higher counts, so the dead tuples' peaks follow the periods'
      // sizes, and what says autovacuum falls behind is the dead tuples it left past that
      // trigger
      const { rows } = await pool.query(
        `select coalesce(sum(s.n_dead_tup), 0)::float8 as dead,
                coalesce(sum(greatest(0, s.n_dead_tup - (
                  current_setting('autovacuum_vacuum_threshold')::float8
                  + current_setting('autovacuum_vacuum_scale_factor')::float8
                    * greatest(c.reltuples, 0)))), 0)::float8 as overdue,
                coalesce(sum(s.autovacuum_count), 0)::float8 as av
         from pg_stat_user_tables s join pg_class c on c.oid = s.relid
         where s.relid in (${leavesOf("'messages'::regclass")} union all
                           ${leavesOf("'deliveries'::regclass")} union all
                           ${leavesOf("'attempts'::regclass")})`,
      );
      const sample: SoakSample = {
        t: Math.round((now - t0) / 100) / 10,
        deliveredPerSecond: ((stats.healthy - lastHealthy) * 1000) / Math.max(1, now - lastAt),
        workerRssMiB: rssMiB(worker.pid),
        apiRssMiB: rssMiB(api.pid),
        historyMiB: Object.values(sizes).reduce((n, s) => n + mib(s.table + s.indexes), 0),
        attemptsMiB: mib(sizes.attempts!.table + sizes.attempts!.indexes),
        deadTuples: rows[0].dead,
        deadPastTrigger: rows[0].overdue,
        autovacuums: rows[0].av,
        attemptPartitions: 0,
      };
      const names = await partitionNames();
      sample.attemptPartitions = names.size;
      for (const name of names) seen.add(name);
      samples.push(sample);
      lastHealthy = stats.healthy;
      lastAt = now;
      ctx.log(`20 soak: ${JSON.stringify(sample)}`);
    }
    await producer;
    const atEnd = await partitionNames();
    return {
      partitionsCreated: [...seen].filter((n) => !atStart.has(n)),
      partitionsDropped: [...seen].filter((n) => !atEnd.has(n)),
      seconds,
      offeredRate: rate,
      retentionMs,
      aheadMs,
      samples,
      verdicts: flatness(samples, rate),
      accepted,
      errors,
    };
  } finally {
    await http?.close();
    for (const p of procs) await stopChild(p, 6_000);
    await receiver.reset();
    await db.drop();
  }
}
