/**
 * The attempts table's partitions (docs/history.md): one per day of ids by default, or per
 * hour (HOOKRELAY_PARTITION_INTERVAL), created ahead of time by the maintenance task and at
 * start, and dropped whole by retention once every row they can hold is past its age.
 *
 * Partitions are ranges of attempt ids, which carry their time (db/sql/attempt-ids.ts).
 * Beside the periods there are always two: attempts_legacy (ids below 2024-01-01's: the
 * rows written before the layout) and attempts_default (anything no period covers: a
 * period not created yet, a clock that jumped), so a missing partition never fails an
 * insert. A period created for rows already in the default partition takes them over.
 *
 * Locks: a new period is a table of its own, filled from the default partition and then
 * attached (SHARE UPDATE EXCLUSIVE on attempts: writes to other partitions go on; the
 * default partition is locked meanwhile, so rows without a period and reads that include
 * it wait those milliseconds). Dropping a period detaches it first, an exclusive lock on
 * attempts for milliseconds, then drops the detached table with no lock on attempts. Both
 * changes wait at most LOCK_TIMEOUT for statements under way, and give up until the next
 * run rather than queue the writers behind them any longer.
 */
import type { Config, PartitionConfig } from "../config.ts";
import type { Pool, PoolClient, Queryable } from "../db/pool.ts";
import { withTransaction } from "../db/pool.ts";
import { attemptIdAt, LEGACY_ATTEMPT_ID_END } from "../db/sql/attempt-ids.ts";
import { INTERVAL_MS } from "../domain/partition-interval.ts";

/** How long partition work waits for running statements on attempts before it gives up. */
export const LOCK_TIMEOUT = "2s";

/**
 * How a period's detach waits for its lock: each try waits at most `lockTimeoutMs` for the
 * statements under way (a longer wait would queue every writer behind it), and a try that
 * gave up is made again after `pauseMs` (half to one and a half of it), `tries` in all;
 * then the period is left for the next run of retention (docs/history.md, "Retention").
 */
export interface DetachPatience {
  lockTimeoutMs: number;
  tries: number;
  pauseMs: number;
}

export const DETACH_PATIENCE: DetachPatience = { lockTimeoutMs: 2_000, tries: 3, pauseMs: 1_000 };

/** What a detach that never got its lock returns: the period is left for the next run. */
export const BUSY = Symbol("busy");

/** A period's detach, dropped or left: what a drop of periods was given to know of it. */
export interface DropOptions {
  patience?: DetachPatience;
  /** told of each period left attached because its lock was not free (BUSY) */
  onBusy?: (name: string) => void;
}

/**
 * Runs `fn` (a detach) in a transaction whose lock waits last at most
 * `patience.lockTimeoutMs`, again after a pause when a lock was not free, and returns BUSY
 * when no try got its locks. Any other error is thrown.
 */
export async function detachTransaction<T>(
  pool: Pool,
  patience: DetachPatience,
  fn: (client: PoolClient) => Promise<T>,
): Promise<T | typeof BUSY> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await withTransaction(pool, async (client) => {
        await client.query(`set local lock_timeout = '${Math.round(patience.lockTimeoutMs)}ms'`);
        return fn(client);
      });
    } catch (err) {
      if ((err as { code?: unknown } | null)?.code !== LOCK_NOT_AVAILABLE) throw err;
      if (attempt >= patience.tries) return BUSY;
      const pause = patience.pauseMs * (0.5 + Math.random());
      await new Promise((resolve) => setTimeout(resolve, pause));
    }
  }
}

/** SQLSTATE lock_not_available: a lock not taken within lock_timeout. */
const LOCK_NOT_AVAILABLE = "55P03";
/** Taken by every partition change, so two processes starting at once never race. */
export const PARTITION_LOCK = 0x686f6f70;
const HOUR_MS = INTERVAL_MS.hour;

export { INTERVAL_MS };

/** One partition of attempts: its name and id range [lo, hi) (±Infinity: MINVALUE, MAXVALUE). */
export interface AttemptPartition {
  name: string;
  lo: number;
  hi: number;
}

const bound = (text: string): number =>
  text === "MINVALUE"
    ? Number.NEGATIVE_INFINITY
    : text === "MAXVALUE"
      ? Number.POSITIVE_INFINITY
      : Number(text.replace(/'/g, ""));

/** The partitioned tables of history: attempts by id, messages and deliveries by message_ms. */
export type HistoryTable = "attempts" | "messages" | "deliveries";

/** The range partitions of attempts in id order (the default partition left out). */
export function listAttemptPartitions(db: Queryable): Promise<AttemptPartition[]> {
  return listPartitions(db, "attempts");
}

/** The range partitions of `table` in key order (the default partition left out). */
export async function listPartitions(
  db: Queryable,
  table: HistoryTable,
): Promise<AttemptPartition[]> {
  const { rows } = await db.query<{ name: string; bound: string }>(
    `select c.relname as name, pg_get_expr(c.relpartbound, c.oid) as bound
     from pg_inherits i join pg_class c on c.oid = i.inhrelid
     where i.inhparent = $1::regclass`,
    [table],
  );
  const out: AttemptPartition[] = [];
  for (const r of rows) {
    const m = /FROM \((.+)\) TO \((.+)\)/.exec(r.bound);
    if (m) out.push({ name: r.name, lo: bound(m[1]!), hi: bound(m[2]!) });
  }
  return out.sort((a, b) => a.lo - b.lo);
}

/** The start (epoch ms, UTC) of the period holding `ms`. */
export function periodStart(ms: number, interval: PartitionConfig["interval"]): number {
  return Math.floor(ms / INTERVAL_MS[interval]) * INTERVAL_MS[interval];
}

/**
 * The periods to make sure of, ascending: those of `waiting` (the starts of rows waiting in
 * a default partition) and every one from now's to `aheadMs` past now.
 */
export function periodsToEnsure(
  waiting: Iterable<number>,
  config: PartitionConfig,
  nowMs: number,
): number[] {
  const starts = new Set(waiting);
  const step = INTERVAL_MS[config.interval];
  const end = periodStart(nowMs + config.aheadMs, config.interval);
  for (let start = periodStart(nowMs, config.interval); start <= end; start += step)
    starts.add(start);
  return [...starts].sort((a, b) => a - b);
}

/**
 * attempts_pYYYYMMDD for a day, attempts_pYYYYMMDDHH for an hour; + MM for a piece that
 * starts off the hour (between partitions of another interval). The same for messages and
 * deliveries with their table's name.
 */
export function partitionName(
  startMs: number,
  interval: PartitionConfig["interval"],
  table: HistoryTable = "attempts",
): string {
  const digits = new Date(startMs).toISOString().slice(0, 16).replace(/\D/g, ""); // 202612061300
  if (interval === "day" && startMs % INTERVAL_MS.day === 0)
    return `${table}_p${digits.slice(0, 8)}`;
  if (startMs % INTERVAL_MS.hour === 0) return `${table}_p${digits.slice(0, 10)}`;
  return `${table}_p${digits}`;
}

/** The parts of [lo, hi) no partition of `existing` covers. */
export function uncovered(
  lo: number,
  hi: number,
  existing: AttemptPartition[],
): Array<[number, number]> {
  const gaps: Array<[number, number]> = [];
  let from = lo;
  for (const p of existing) {
    if (p.hi <= from || p.lo >= hi) continue;
    if (p.lo > from) gaps.push([from, p.lo]);
    from = Math.max(from, p.hi);
    if (from >= hi) break;
  }
  if (from < hi) gaps.push([from, hi]);
  return gaps;
}

/** The id of a period's start: the ms is a whole second, so attemptIdAt is exact. */
const idOf = (ms: number) => attemptIdAt(ms);
const timeOfId = (id: number) => (Math.floor(id / 2 ** 21) + 1_577_836_800) * 1000;

/**
 * Whether this connection's role may create and drop partitions of attempts: CREATE on
 * its schema, and the table's owner (or a member of its role). A role with DML rights
 * only (docs/database.md, "Roles and schema") may not: its rows stay in the default
 * partition and retention deletes them in batches.
 */
export async function mayManagePartitions(db: Queryable): Promise<boolean> {
  const { rows } = await db.query<{ may: boolean }>(
    `select has_schema_privilege(c.relnamespace, 'CREATE') and pg_has_role(c.relowner, 'USAGE') as may
     from pg_class c where c.oid = 'attempts'::regclass`,
  );
  return rows[0]?.may === true;
}

/**
 * Creates the missing periods from now to `aheadMs` from now, and those of rows waiting in
 * the default partition that are younger than `keepMs` (older ones are retention's); returns
 * the names created.
 */
export async function ensureAttemptPartitions(
  pool: Pool,
  config: PartitionConfig,
  keepMs: number,
  nowMs: number = Date.now(),
): Promise<string[]> {
  if (!(await mayManagePartitions(pool))) return [];
  const step = INTERVAL_MS[config.interval];
  // the periods of the rows waiting in the default partition (a small table: rows only
  // wait there until their period exists)
  const { rows } = await pool.query<{ start: number }>(
    `select distinct (floor(extract(epoch from hookrelay_attempt_time(id)) * 1000 / $3::bigint) * $3::bigint)::bigint as start
     from attempts_default where id >= $1::bigint and id >= $2::bigint`,
    [LEGACY_ATTEMPT_ID_END, Math.max(LEGACY_ATTEMPT_ID_END, attemptIdAt(nowMs - keepMs)), step],
  );
  const created: string[] = [];
  for (const start of periodsToEnsure(
    rows.map((r) => Number(r.start)),
    config,
    nowMs,
  )) {
    for (const [lo, hi] of uncovered(
      idOf(start),
      idOf(start + step),
      await listAttemptPartitions(pool),
    )) {
      const name = await createPartition(
        pool,
        lo,
        hi,
        partitionName(timeOfId(lo), config.interval),
      );
      if (name !== null) created.push(name);
    }
  }
  return created;
}

/** Creates and attaches the partition [lo, hi), taking over its rows from the default one. */
async function createPartition(
  pool: Pool,
  lo: number,
  hi: number,
  name: string,
): Promise<string | null> {
  return withTransaction(pool, async (client) => {
    await client.query(`set local lock_timeout = '${LOCK_TIMEOUT}'`);
    await client.query("select pg_advisory_xact_lock($1::bigint)", [PARTITION_LOCK]);
    // another process may have made it since this one looked
    if (uncovered(lo, hi, await listAttemptPartitions(client)).length === 0) return null;
    // rows without a period wait here, so none arrives between the move and the attach
    await client.query("lock table attempts_default in exclusive mode");
    await client.query(
      `create table ${name} (like attempts including defaults including constraints)`,
    );
    await client.query(
      `with moved as (delete from attempts_default where id >= $1::bigint and id < $2::bigint returning *)
       insert into ${name} select * from moved`,
      [lo, hi],
    );
    // see migration 0026: rows written with an older created_at than their id's time
    await client.query(
      `create index ${name}_backdated_idx on ${name} (created_at)
       where created_at < hookrelay_attempt_time(id - 7549747200)`,
    );
    await client.query(
      `alter table attempts attach partition ${name} for values from (${lo}) to (${hi})`,
    );
    return name;
  });
}

/** A dropped partition: its name and PostgreSQL's estimate of the rows it held (null: unknown). */
export interface DroppedPartition {
  name: string;
  rows: number | null;
}

/**
 * Drops every period partition whose ids all lie before `cutoffMs` (epoch ms): all of its
 * rows are older than the cutoff. The legacy and default partitions are never dropped
 * (their old rows go by batched delete, src/ops/retention.ts), nor any by a role that may
 * not (mayManagePartitions): retention then deletes their rows in batches.
 */
export async function dropAttemptPartitionsBefore(
  pool: Pool,
  cutoffMs: number,
  options: DropOptions = {},
): Promise<DroppedPartition[]> {
  if (!(await mayManagePartitions(pool))) return [];
  const limit = attemptIdAt(cutoffMs);
  const dropped: DroppedPartition[] = [];
  for (const p of await listAttemptPartitions(pool)) {
    if (p.lo < LEGACY_ATTEMPT_ID_END || p.hi > limit) continue;
    // Detached first, in a transaction of its own: the exclusive lock on attempts is held
    // for that catalog change only, not while the drop below unlinks the files (a second
    // or more for a big day, during which writers of attempts would wait).
    const rows = await detachTransaction(
      pool,
      options.patience ?? DETACH_PATIENCE,
      async (client) => {
        await client.query("select pg_advisory_xact_lock($1::bigint)", [PARTITION_LOCK]);
        const { rows: est } = await client.query<{ n: number }>(
          `select c.reltuples::bigint as n from pg_class c join pg_inherits i on i.inhrelid = c.oid
         where c.oid = to_regclass($1::text) and i.inhparent = 'attempts'::regclass`,
          [p.name],
        );
        if (est.length === 0) return undefined; // detached by another process meanwhile
        await client.query(`alter table attempts detach partition ${p.name}`);
        const n = est[0]!.n;
        return n < 0 ? null : n;
      },
    );
    if (rows === BUSY) {
      options.onBusy?.(p.name);
      continue;
    }
    if (rows === undefined) continue;
    await pool.query(`drop table if exists ${p.name}`);
    dropped.push({ name: p.name, rows });
  }
  // periods detached by a run that stopped before it dropped them
  const { rows: left } = await pool.query<{ name: string }>(
    `select c.relname as name from pg_class c
     where c.relnamespace = (select relnamespace from pg_class where oid = 'attempts'::regclass)
       and c.relkind = 'r' and c.relname ~ '^attempts_p[0-9]+$'
       and not exists (select from pg_inherits i where i.inhrelid = c.oid)`,
  );
  for (const { name } of left) {
    await pool.query(`drop table if exists ${name}`);
    dropped.push({ name, rows: null });
  }
  return dropped;
}

/**
 * What an operator should hear about the partition settings at start (docs/history.md,
 * "Bad input"): nothing is refused, since every combination keeps working.
 */
export function partitionNotes(config: Pick<Config, "retention" | "partitions">): string[] {
  const notes: string[] = [];
  const interval = INTERVAL_MS[config.partitions.interval];
  const hours = (ms: number) => `${Math.round((ms / HOUR_MS) * 10) / 10} h`;
  if (config.retention.attemptsMs < interval)
    notes.push(
      `HOOKRELAY_RETENTION_ATTEMPTS_MS (${hours(config.retention.attemptsMs)}) is shorter than one attempts partition (${config.partitions.interval}): attempts are kept up to ${hours(config.retention.attemptsMs + interval)}, since a partition goes whole; HOOKRELAY_PARTITION_INTERVAL=hour keeps them closer to their age`,
    );
  if (config.retention.payloadMs < interval)
    notes.push(
      `HOOKRELAY_RETENTION_PAYLOAD_MS (${hours(config.retention.payloadMs)}) is shorter than one partition of messages and deliveries (${config.partitions.interval}): delivered messages are kept up to ${hours(config.retention.payloadMs + interval)}, since a partition goes whole; HOOKRELAY_PARTITION_INTERVAL=hour keeps them closer to their age`,
    );
  if (config.partitions.aheadMs < interval)
    notes.push(
      `HOOKRELAY_PARTITIONS_AHEAD_MS (${hours(config.partitions.aheadMs)}) is shorter than one partition: should maintenance stop for a while, new attempts, messages and deliveries wait in the default partitions until it creates their partition`,
    );
  return notes;
}
