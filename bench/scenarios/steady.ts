/**
 * Scenario 19: steady state (docs/performance.md). In one run, the same measurements on an
 * empty database and on one holding a month of history (bench/scenarios/steady-history.ts):
 *
 * - the claim: `claimDeliveries` of 500 rows over a backlog of `--steady-deliveries`
 *   pending deliveries, rolled back (scenario 8's timing), before the worker starts; both
 *   backlogs are seeded first and the two databases' claims timed in turn;
 * - delivery: one worker delivers that backlog; the rate at the receiver, the WAL written
 *   per delivery (pg_current_wal_insert_lsn before and after) and, on the full database,
 *   retention running meanwhile as the maintenance task runs it (`purgeExpiredUntil`) with
 *   ages that make it drop one day;
 * - ingest: scenario 5 against the database;
 * - the dashboard's pages: scenario 11's timings, in Chromium where it is installed;
 * - on the full database, the cost of purging the next day: its attempts copied into an
 *   unpartitioned table, then dropped by partition and deleted by scenario 16's batched
 *   DELETE + VACUUM, per row.
 */
import { dropAttemptPartitionsBefore } from "../../src/ops/attempt-partitions.ts";
import { raiseDeliveryFloor } from "../../src/ops/delivery-floor.ts";
import { purgeExpiredUntil } from "../../src/ops/retention.ts";
import { topStatements } from "../lib/cluster.ts";
import type { BenchContext, FreshDb } from "../lib/context.ts";
import { deadlineFor } from "../lib/context.ts";
import { type CpuSpent, perThousand, startCpuMeter } from "../lib/cpu.ts";
import { formatPgCpuByKind, startPgCpuByKind } from "../lib/pg-cpu-kinds.ts";
import { startHookrelay, stopChild } from "../lib/procs.ts";
import { createTenants, makeMessages, seedMessages, type Tenant } from "../lib/seed.ts";
import { nowMs, ratePerSecond, sleep, waitUntil } from "../lib/stats.ts";
import { timeClaimsAlternating } from "./backlog.ts";
import { type DashboardRun, measureDashboard } from "./dashboard.ts";
import { coldBeforePurge, deleteBefore, measured, measuredDrop, type Purge } from "./history.ts";
import { type IngestRun, runIngest } from "./ingest.ts";
import { DAY, type SteadyHistory } from "./steady-history.ts";

/** Retention's statements (src/ops/retention.ts, attempt-partitions.ts) in pg_stat_statements. */
const RETENTION_SQL =
  "^\\s*(delete from (attempts|deliveries|messages) where (id|ctid) = any|with gone as \\(\\s*delete from messages|alter table \\w+ detach partition|drop table if exists \\w+)";

/** Work running beside a delivery run until `ended()` says the deliveries arrived. */
type During = (ended: () => boolean) => Promise<void>;

export interface SteadyDelivery {
  rate: number;
  delivered: number;
  /**
   * median of the claims timed claim by claim in turn with the other side's
   * (timeClaimsAlternating), so both meet the same moments of the machine
   */
  claimMs: number;
  claimedRows: number;
  /** WAL written from the worker's start until every delivery was written back, per delivery */
  walPerDelivery: number;
  /** of which retention's own statements (full database), per delivery */
  retentionWalPerDelivery: number;
  cpuPerThousand: CpuSpent;
}

export interface SteadySide {
  delivery: SteadyDelivery;
  /** null under --quick */
  ingest: IngestRun | null;
  /** full database only */
  dashboard: DashboardRun | null;
}

export interface SteadyRetention {
  ms: number;
  droppedPartitions: string[];
  /** left attached by a slice because statements under way held their lock (taken by a later slice) */
  busyPartitions: string[];
  deleted: Record<string, number>;
  /** false: still deleting when the delivery ended (stopped there) */
  done: boolean;
}

export interface SteadyRun {
  empty: SteadySide;
  full: SteadySide;
  retention: SteadyRetention;
  purge: { rows: number; drop: Purge; delete: Purge; vacuum: Purge };
  seedSeconds: number;
  /** bytes per day of history, table (with TOAST) and indexes, by table */
  bytesPerDay: Record<string, { table: number; indexes: number }>;
}

/**
 * The backlog of a delivery run: `--steady-deliveries` messages, analyzed, and the claim's
 * floor where a running worker's maintenance keeps it (at its start and every minute): at
 * the oldest queued row's period, so the claim reads today's periods and not the month's (a
 * fresh database's floor, 0, reads every period).
 */
async function seedBacklog(ctx: BenchContext, db: FreshDb, tenants: Tenant[]): Promise<void> {
  await seedMessages(db.pool, tenants, makeMessages(ctx.opts.steadyDeliveries, tenants.length));
  await db.pool.query("analyze messages, deliveries");
  await raiseDeliveryFloor(db.pool);
}

/** Delivers the backlog seedBacklog left, with `during` beside it (retention, on full). */
async function deliver(
  ctx: BenchContext,
  db: FreshDb,
  claim: { ms: number; rows: number },
  during: During | null,
): Promise<SteadyDelivery> {
  const { opts, receiver } = ctx;
  const n = opts.steadyDeliveries;
  await receiver.configure({ delayMs: 0, hanging: [], secret: ctx.secret, record: false });
  // each side starts its delivery right after a checkpoint: neither meets one the other does
  // not (the seed's WAL, gigabytes on the full side, would bring one in the middle of its
  // run, and with it full-page images in the WAL per delivery)
  await db.pool.query("checkpoint");
  await receiver.reset();
  await ctx.cluster.admin((c) => c.query("select pg_stat_statements_reset()"));
  const lsn0 = await lsn(db);
  // the worker's own retention keeps its hands off the history: the bench runs it (during)
  const year = String(365 * DAY);
  const worker = await startHookrelay("worker", db.url, {
    HOOKRELAY_WORKER_CONCURRENCY: String(opts.concurrency),
    HOOKRELAY_RETENTION_ATTEMPTS_MS: year,
    HOOKRELAY_RETENTION_PAYLOAD_MS: year,
    HOOKRELAY_RETENTION_DEAD_LETTER_MS: year,
  });
  try {
    const cpu = startCpuMeter({
      worker: () => [worker.pid],
      postgres: () => ctx.cluster.pids(),
    });
    const pgKinds = startPgCpuByKind(() => ctx.cluster.pids(), db.pool);
    let ended = false;
    const side = during?.(() => ended);
    const s = await receiver.waitForHealthy(n, deadlineFor(n, 100));
    const spent = cpu();
    ctx.log(`  PostgreSQL CPU per 1,000 by process: ${formatPgCpuByKind(await pgKinds(), n)}`);
    ended = true;
    await waitUntil(
      async () =>
        (await db.pool.query("select not exists (select from deliveries where queued) as done"))
          .rows[0].done,
      30_000,
      200,
    );
    const wal = Number(
      (await db.pool.query("select pg_wal_lsn_diff(pg_current_wal_insert_lsn(), $1) as b", [lsn0]))
        .rows[0].b,
    );
    await side;
    // what PostgreSQL spent its time on, to compare the two sides statement by statement
    for (const t of await topStatements(ctx.cluster, 6))
      ctx.log(
        `    ${t.calls} x ${t.meanMs} ms (${t.totalMs} ms, ${Math.round(t.sharedBlksHit / Math.max(1, t.calls))} hits a call): ${t.query.slice(0, 90)}`,
      );
    const { rows } = await ctx.cluster.admin((c) =>
      c.query(
        "select coalesce(sum(wal_bytes), 0)::float8 as b from pg_stat_statements where query ~* $1",
        [RETENTION_SQL],
      ),
    );
    return {
      rate: ratePerSecond(s.healthy, s.healthyFirst, s.healthyLast),
      delivered: s.healthy,
      claimMs: claim.ms,
      claimedRows: claim.rows,
      walPerDelivery: wal / Math.max(1, s.healthy),
      retentionWalPerDelivery: rows[0].b / Math.max(1, s.healthy),
      cpuPerThousand: perThousand(spent, s.healthy),
    };
  } finally {
    await stopChild(worker, 6_000);
    await receiver.reset();
  }
}

const lsn = async (db: FreshDb) =>
  (await db.pool.query("select pg_current_wal_insert_lsn()::text as l")).rows[0].l as string;

async function side(
  ctx: BenchContext,
  db: FreshDb,
  tenants: Tenant[],
  claim: { ms: number; rows: number },
  during: During | null,
): Promise<SteadySide> {
  const which = during ? "full" : "empty";
  const delivery = await deliver(ctx, db, claim, during);
  ctx.log(`19 steady, ${which}: delivery ${JSON.stringify(delivery)}`);
  // (--quick leaves it out: scenario 5 smoke-tests the same code, and each API start costs)
  const ingest = ctx.opts.quick ? null : await runIngest(ctx, { db, tenants });
  ctx.log(`19 steady, ${which}: ingest ${Math.round(ingest?.rate ?? Number.NaN)}/s`);
  // the pages' target is absolute (< 1 s each): timed on the full database only
  if (!during) return { delivery, ingest, dashboard: null };
  // (--quick times the pages server-side only: scenario 11 smoke-tests the same browser
  // code, and each Chromium launch costs seconds)
  const dashboard = await measureDashboard(
    ctx,
    {
      db,
      chartEndpointId: tenants[0]!.endpointId,
      pageEndpointId: tenants[1]!.endpointId,
      attempts: 0,
      endpoints: tenants.length,
      deliveries: 0,
      seedMs: 0,
      rollupMs: 0,
    },
    { browser: !ctx.opts.quick },
  );
  return { delivery, ingest, dashboard };
}

export async function measureSteady(ctx: BenchContext, h: SteadyHistory): Promise<SteadyRun> {
  // run r drops day 2r by retention and measures the purge of day 2r + 1
  const dropDay = 2 * h.runs;
  if (dropDay + 2 > h.days)
    throw new Error("19 steady: no day left to purge (raise --steady-days)");
  h.runs++;

  const empty = await ctx.freshDb("steady_empty");
  let emptySide: SteadySide;
  let fullClaim: { ms: number; rows: number };
  try {
    const tenants = await createTenants(empty.pool, ctx.receiver.urls, ctx.secret);
    // both backlogs first, then the claims timed claim by claim in turn: timed each in its
    // own side's phase, minutes apart, they met different loads of a shared machine (full
    // / empty 0.82-1.66 between runs of the same code)
    await seedBacklog(ctx, empty, tenants);
    await seedBacklog(ctx, h.db, h.tenants);
    const [emptyClaim, full] = await timeClaimsAlternating(
      [empty, h.db],
      ctx.opts.quick ? 2 : 30,
      ctx.opts.claimLimit,
    );
    fullClaim = full!;
    emptySide = await side(ctx, empty, tenants, emptyClaim!, null);
  } finally {
    await empty.drop();
  }

  // every age a little past the end of day `dropDay`: its attempt partition goes whole, its
  // messages (and anything else that old) as retention takes them today
  let retention: SteadyRetention | null = null;
  const retain: During = async (ended) => {
    await sleep(ctx.opts.quick ? 0 : 1_000);
    const age = Date.now() - (h.first + (dropDay + 1) * DAY) - 60_000;
    const t0 = nowMs();
    const r: SteadyRetention = {
      ms: 0,
      droppedPartitions: [],
      busyPartitions: [],
      deleted: {},
      done: false,
    };
    // in slices of 2 s, as the purge route runs it, until done or the deliveries are in
    // (at least one slice: a fast delivery may be over before retention starts); a period
    // left busy is taken by a later slice, as by the maintenance task's next run
    let busy = false;
    do {
      const slice = await purgeExpiredUntil(
        h.db.pool,
        { attemptsMs: age, payloadMs: age, deadLetterMs: age, batch: 2_000 },
        Date.now() + 2_000,
      );
      r.droppedPartitions.push(...slice.droppedPartitions.map((p) => p.name));
      r.busyPartitions.push(...slice.busyPartitions);
      for (const [what, n] of Object.entries(slice.deleted))
        r.deleted[what] = (r.deleted[what] ?? 0) + n;
      r.done = slice.done;
      busy = slice.busyPartitions.length > 0;
    } while ((!r.done || busy) && !ended());
    r.ms = nowMs() - t0;
    retention = r;
    ctx.log(`19 steady: retention during delivery: ${JSON.stringify(retention)}`);
  };
  const fullSide = await side(ctx, h.db, h.tenants, fullClaim, retain);

  const purge = await measurePurge(ctx, h, h.first + (dropDay + 1) * DAY);
  const days = h.days;
  return {
    empty: emptySide,
    full: fullSide,
    retention: retention ?? {
      ms: 0,
      droppedPartitions: [],
      busyPartitions: [],
      deleted: {},
      done: false,
    },
    purge,
    seedSeconds: (h.seed.rowsMs + h.seed.indexMs + h.seed.vacuumMs + h.seed.rollupMs) / 1000,
    bytesPerDay: Object.fromEntries(
      Object.entries(h.sizes).map(([t, s]) => [
        t,
        { table: s.table / days, indexes: s.indexes / days },
      ]),
    ),
  };
}

/**
 * One day's attempts (from `dayStart`), purged twice: their partition dropped, and a copy
 * in an unpartitioned table deleted by retention's batched DELETE of before, then VACUUM.
 */
async function measurePurge(ctx: BenchContext, h: SteadyHistory, dayStart: number) {
  const pool = h.db.pool;
  const end = dayStart + DAY;
  // anything older left by the retention run (a detach that gave up on its lock)
  await dropAttemptPartitionsBefore(pool, dayStart);
  await pool.query("drop table if exists attempts_flat");
  await pool.query("create table attempts_flat (like attempts including all)");
  await pool.query("alter table attempts_flat set (autovacuum_enabled = false)");
  await pool.query(
    "insert into attempts_flat select * from attempts where created_at >= $1 and created_at < $2",
    [new Date(dayStart), new Date(end)],
  );
  await pool.query("vacuum (analyze) attempts_flat");
  try {
    const bytes = await coldBeforePurge(ctx, pool, end, "attempts_flat", "19 steady");
    let dropped = 0;
    const drop = await measuredDrop(ctx, pool, bytes, async () => {
      dropped = (await dropAttemptPartitionsBefore(pool, end)).length;
    });
    if (dropped !== 1) throw new Error(`19 steady: expected to drop one partition, not ${dropped}`);
    let rows = 0;
    const del = await measured(ctx, pool, async () => {
      rows = await deleteBefore(pool, "attempts_flat", end);
    });
    const vacuum = await measured(ctx, pool, async () => {
      await pool.query("vacuum attempts_flat");
    });
    ctx.log(`19 steady: purge of a day: ${JSON.stringify({ rows, drop, del, vacuum })}`);
    return { rows, drop, delete: del, vacuum };
  } finally {
    await pool.query("drop table if exists attempts_flat");
  }
}
