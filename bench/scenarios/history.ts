/**
 * Scenario 16: the cost of purging a day of history (docs/history.md). One database holds
 * `--history-attempts` attempts spread evenly over `--history-days` days twice: in the
 * partitioned attempts table (a partition per day) and in a copy with the layout before
 * partitioning (one table, the same indexes). Each run purges the oldest day left from
 * both: by dropping its partition (retention's way now) and by the batched DELETE that
 * retention ran before (2,000 rows a statement), followed by the VACUUM that the deletes
 * leave to autovacuum. Figures: time, PostgreSQL CPU (postmaster and children, from /proc,
 * 10 ms ticks: a drop's CPU is counted as at least one tick) and WAL per purged row, their
 * ratios, and the table and index size of one day.
 */
import path from "node:path";
import { type Pool, withTransaction } from "../../src/db/pool.ts";
import { attemptIdAt, LEGACY_ATTEMPT_ID_END } from "../../src/db/sql/attempt-ids.ts";
import {
  dropAttemptPartitionsBefore,
  ensureAttemptPartitions,
  listAttemptPartitions,
} from "../../src/ops/attempt-partitions.ts";
import type { BenchContext, FreshDb } from "../lib/context.ts";
import { startCpuMeter } from "../lib/cpu.ts";
import { mountedWithDiscard, timeFilesystemFree } from "../lib/fs-free.ts";
import { evictFromPageCache } from "../lib/page-cache.ts";
import { nowMs } from "../lib/stats.ts";

const DAY = 86_400_000;
const BATCH = 2_000;

export interface HistoryData {
  db: FreshDb;
  days: number;
  rowsPerDay: number;
  seedMs: number;
  /** the first day's partition: heap, indexes (incl. TOAST), total */
  dayBytes: { table: number; indexes: number; total: number };
  /** the oldest day not purged yet (epoch ms of its start) */
  next: number;
}

export interface Purge {
  ms: number;
  cpuMs: number;
  walBytes: number;
  /**
   * A drop's: the time the filesystem alone took to free as many bytes as the dropped
   * files held, measured beside it (bench/lib/fs-free.ts); part of `ms`
   */
  fsFreeMs?: number;
}

export interface HistoryRun {
  rows: number;
  drop: Purge;
  delete: Purge;
  vacuum: Purge;
  /** (DELETE + VACUUM) / (drop less the filesystem's freeing of its bytes), per purged row */
  timeRatioPg: number;
  /** (DELETE + VACUUM) / drop, per purged row */
  timeRatio: number;
  cpuRatio: number;
  walRatio: number;
}

export async function prepareHistory(ctx: BenchContext): Promise<HistoryData> {
  const { historyAttempts, historyDays: days } = ctx.opts;
  const rowsPerDay = Math.max(1, Math.floor(historyAttempts / days));
  const db = await ctx.freshDb("history");
  const t0 = nowMs();
  const today = Date.now() - (Date.now() % DAY);
  const first = today - days * DAY;
  await ensureAttemptPartitions(
    db.pool,
    { interval: "day", aheadMs: (days + 1) * DAY },
    days * DAY,
    first,
  );
  await db.pool.query("create table attempts_flat (like attempts including all)");
  for (let d = 0; d < days; d++) {
    const dayStart = first + d * DAY;
    // row g at second g * 86400 / rowsPerDay of the day, its id as the writer would make it
    const select = `
      select hookrelay_attempt_id_at(t) + g % 2097152, g, 'msg_' || lpad((g % 100000)::text, 22, '0'), 'ep_' || (g % 100),
             'app_' || (g % 100), 1 + g % 3, 'scheduled', 'https://receiver.example/hook/' || (g % 100), t,
             20 + g % 200, case when g % 20 = 0 then 'failure' else 'success' end,
             case when g % 20 = 0 then 503 else 200 end, null, null, '{"ok":true}', t
      from generate_series(0, $2::int - 1) g,
           lateral (select $1::timestamptz + floor(g::numeric * 86400 / $2::int) * interval '1 second' as t) s`;
    const cols = `(id, delivery_id, message_id, endpoint_id, app_id, attempt_number, trigger, url, started_at,
                   latency_ms, outcome, status_code, error_kind, error, response_body, created_at)`;
    await withTransaction(db.pool, async (client) => {
      await client.query(`insert into attempts ${cols} ${select}`, [
        new Date(dayStart),
        rowsPerDay,
      ]);
      await client.query(`insert into attempts_flat ${cols} ${select}`, [
        new Date(dayStart),
        rowsPerDay,
      ]);
    });
    ctx.log(`16 history: day ${d + 1}/${days} seeded (${rowsPerDay} attempts in each layout)`);
  }
  await db.pool.query("vacuum (analyze) attempts, attempts_flat");
  // no autovacuum during the measurements: its work on one layout would be counted in the
  // other's CPU; the explicit VACUUM after the deletes stands in for it
  const { rows: parts } = await db.pool.query<{ name: string }>(
    "select inhrelid::regclass::text as name from pg_inherits where inhparent = 'attempts'::regclass",
  );
  for (const t of [...parts.map((p) => p.name), "attempts_flat"])
    await db.pool.query(`alter table ${t} set (autovacuum_enabled = false)`);
  const seedMs = nowMs() - t0;
  const { rows } = await db.pool.query(
    `select pg_relation_size(c.oid)::bigint as heap, pg_indexes_size(c.oid)::bigint as idx,
            pg_total_relation_size(c.oid)::bigint as total
     from pg_inherits i join pg_class c on c.oid = i.inhrelid
     where i.inhparent = 'attempts'::regclass
       and pg_get_expr(c.relpartbound, c.oid) like '%' || $1::text || '%'`,
    [`FROM ('${attemptIdAt(first)}')`],
  );
  const day = rows[0] ?? { heap: 0, idx: 0, total: 0 };
  const mb = (b: unknown) => (Number(b) / 1_048_576).toFixed(1);
  ctx.log(
    `16 history: one day (${rowsPerDay} attempts): table ${mb(day.heap)} MB, indexes ${mb(day.idx)} MB, total with TOAST ${mb(day.total)} MB`,
  );
  return {
    db,
    days,
    rowsPerDay,
    seedMs,
    dayBytes: { table: Number(day.heap), indexes: Number(day.idx), total: Number(day.total) },
    next: first,
  };
}

/**
 * Wall time, PostgreSQL CPU and WAL of `work` (scenario 19 measures its purge with it too).
 * The CPU is the whole cluster's, so nothing else runs in it meanwhile: autovacuum is off
 * for the time (the workers it has running are cancelled) and a checkpoint runs first; a
 * drop takes tens of milliseconds, and an autovacuum worker busy beside it on the tables a
 * delivery run just wrote made its CPU ten times what the drop itself spent.
 */
export async function measured(
  ctx: BenchContext,
  pool: Pool,
  work: () => Promise<void>,
): Promise<Purge> {
  const lsn = async () =>
    (await pool.query("select pg_current_wal_insert_lsn()::text as l")).rows[0].l as string;
  await pool.query("alter system set autovacuum = off");
  await pool.query("select pg_reload_conf()");
  try {
    await pool.query(
      "select pg_cancel_backend(pid) from pg_stat_activity where backend_type = 'autovacuum worker'",
    );
    await pool.query("checkpoint");
    const before = await lsn();
    const meter = startCpuMeter({ pg: () => ctx.cluster.pids() });
    const t0 = nowMs();
    await work();
    const ms = nowMs() - t0;
    const cpu = meter();
    const after = await lsn();
    const { rows } = await pool.query(
      "select pg_wal_lsn_diff($1::pg_lsn, $2::pg_lsn)::bigint as b",
      [after, before],
    );
    return { ms, cpuMs: cpu.ms.pg ?? 0, walBytes: Number(rows[0].b) };
  } finally {
    await pool.query("alter system reset autovacuum");
    await pool.query("select pg_reload_conf()");
  }
}

/**
 * Retention's batched DELETE before partitioning (src/ops/retention.ts before migration
 * 0026), on `table` (an unpartitioned copy of attempts): every row created before
 * `cutoff`, 2,000 a statement, by ctid. Returns the rows deleted.
 */
export async function deleteBefore(pool: Pool, table: string, cutoff: number): Promise<number> {
  let deleted = 0;
  for (;;) {
    const { rowCount } = await pool.query(
      `delete from ${table} where ctid = any (array(
         select ctid from ${table} where created_at < $1::timestamptz limit $2::integer))`,
      [new Date(cutoff), BATCH],
    );
    deleted += rowCount ?? 0;
    if ((rowCount ?? 0) < BATCH) return deleted;
  }
}

/**
 * Takes the attempt partitions a drop before `cutoff` would drop, and `copy` (the same rows
 * in an unpartitioned table), out of the page cache: both purges start cold, as a month-old
 * day does (bench/lib/page-cache.ts). Logs the bytes.
 */
export async function coldBeforePurge(
  ctx: BenchContext,
  pool: Pool,
  cutoff: number,
  copy: string,
  label: string,
): Promise<number> {
  const limit = attemptIdAt(cutoff);
  const parts = (await listAttemptPartitions(pool))
    .filter((p) => p.lo >= LEGACY_ATTEMPT_ID_END && p.hi <= limit)
    .map((p) => p.name);
  const mb = (b: number) => (b / 1_048_576).toFixed(0);
  const partBytes = await evictFromPageCache(pool, ctx.cluster.dataDir, parts);
  const copyBytes = await evictFromPageCache(pool, ctx.cluster.dataDir, [copy]);
  ctx.log(
    `${label}: out of the page cache before the purges: ${parts.join(", ")} (${mb(partBytes)} MB) and ${copy} (${mb(copyBytes)} MB)`,
  );
  return partBytes;
}

/**
 * `measured(work)` for a drop of partitions holding `bytes`, with the filesystem's own time
 * to free as many bytes (bench/lib/fs-free.ts), measured right after.
 */
export async function measuredDrop(
  ctx: BenchContext,
  pool: Pool,
  bytes: number,
  work: () => Promise<void>,
): Promise<Purge> {
  const drop = await measured(ctx, pool, work);
  const dir = path.dirname(ctx.cluster.dataDir);
  const fsFreeMs = await timeFilesystemFree(dir, bytes);
  const discard = (await mountedWithDiscard(dir)) ? "with" : "without";
  ctx.log(
    `  drop ${drop.ms.toFixed(1)} ms; freeing ${(bytes / 1_048_576).toFixed(0)} MB of a plain file on the same filesystem (mounted ${discard} online discard) ${fsFreeMs.toFixed(1)} ms`,
  );
  return { ...drop, fsFreeMs };
}

/** (DELETE + VACUUM) over the drop's time, whole and less the filesystem's freeing. */
export function purgeTimeRatios(drop: Purge, del: Purge, vacuum: Purge) {
  const slow = del.ms + vacuum.ms;
  const pg = drop.ms - Math.min(drop.fsFreeMs ?? 0, drop.ms);
  return { timeRatio: slow / Math.max(drop.ms, 0.001), timeRatioPg: slow / Math.max(pg, 0.001) };
}

/** Purges the oldest day left, once by partition drop and once by batched DELETE + VACUUM. */
export async function measureHistory(ctx: BenchContext, data: HistoryData): Promise<HistoryRun> {
  const cutoff = data.next + DAY;
  if (cutoff > Date.now() - DAY)
    throw new Error("16 history: no day left to purge (raise --history-days)");
  data.next = cutoff;
  const pool = data.db.pool;
  const bytes = await coldBeforePurge(ctx, pool, cutoff, "attempts_flat", "16 history");
  let dropped = 0;
  const drop = await measuredDrop(ctx, pool, bytes, async () => {
    dropped = (await dropAttemptPartitionsBefore(pool, cutoff)).length;
  });
  if (dropped !== 1)
    throw new Error(`16 history: expected to drop one partition, dropped ${dropped}`);
  let deleted = 0;
  const del = await measured(ctx, pool, async () => {
    deleted = await deleteBefore(pool, "attempts_flat", cutoff);
  });
  if (deleted !== data.rowsPerDay)
    throw new Error(`16 history: DELETE removed ${deleted} rows, expected ${data.rowsPerDay}`);
  const vacuum = await measured(ctx, pool, async () => {
    await pool.query("vacuum attempts_flat");
  });
  // a drop's CPU can fall under one 10 ms tick: count it as one
  const dropCpu = Math.max(drop.cpuMs, 10);
  return {
    rows: deleted,
    drop,
    delete: del,
    vacuum,
    ...purgeTimeRatios(drop, del, vacuum),
    cpuRatio: (del.cpuMs + vacuum.cpuMs) / dropCpu,
    walRatio: (del.walBytes + vacuum.walBytes) / Math.max(drop.walBytes, 1),
  };
}
