/**
 * The periods of messages and deliveries (docs/history.md, "Messages and deliveries"): both
 * tables are partitioned by message_ms, the millisecond a message's id carries (the same on
 * its deliveries), with the same bounds, so a message and its deliveries share a period,
 * are created together and dropped together. The interval, the "ahead" setting and the
 * owner rules are the attempts' (attempt-partitions.ts, partition-owner.ts).
 *
 * Beside the periods there are always two partitions of each: `_legacy` (message_ms below
 * 1: rows written before the layout) and `_default` (a period not created yet, a clock that
 * jumped, and the held rows below), so a missing period never fails an insert. A period
 * created for rows waiting in the default partitions takes them over, as attempts' does.
 *
 * A period is dropped once its end is older than the payload retention. What must outlive
 * it (a message with a delivery still queued, or dead-lettered within the dead-letter age,
 * with all its deliveries) is copied out in the drop's transaction, and written again
 * through the parents once the period is detached: the rows land in the default
 * partitions, the held rows' home, where the batched deletes of retention.ts take them
 * once their work is done and they are past their age.
 */
import type { Config, PartitionConfig } from "../config.ts";
import type { Pool, PoolClient, Queryable } from "../db/pool.ts";
import { withTransaction } from "../db/pool.ts";
import {
  BUSY,
  DETACH_PATIENCE,
  type DropOptions,
  type DroppedPartition,
  detachTransaction,
  ensureAttemptPartitions,
  INTERVAL_MS,
  LOCK_TIMEOUT,
  listPartitions,
  mayManagePartitions,
  PARTITION_LOCK,
  partitionName,
  periodsToEnsure,
  uncovered,
} from "./attempt-partitions.ts";

/** The two tables partitioned by message_ms, in the order they are locked and written. */
const TABLES = ["messages", "deliveries"] as const;

/**
 * The storage parameters of a table's periods. A partitioned table holds none and `create
 * table (like ...)` copies none, so deliveries' free fifth of each page, which lets a claim
 * rewrite its rows in place (migration 0007), is given to each period here (and to the
 * partitions made before this by migration 0043).
 */
const STORAGE: Record<(typeof TABLES)[number], string> = {
  messages: "",
  deliveries: " with (fillfactor = 80)",
};

/**
 * The columns a statement may write, in table order: generated ones (deliveries' queued and
 * dead_lettered) are computed by the table itself.
 */
async function writableColumns(db: Queryable, table: string): Promise<string> {
  const { rows } = await db.query<{ cols: string }>(
    `select string_agg(quote_ident(attname), ', ' order by attnum) as cols from pg_attribute
     where attrelid = $1::regclass and attnum > 0 and not attisdropped and attgenerated = ''`,
    [table],
  );
  return rows[0]!.cols;
}

/**
 * The periods of all three tables: attempts' (kept as long as attempts are), then messages'
 * and deliveries' (as long as payloads are); returns the names created.
 */
export async function ensureHistoryPartitions(
  pool: Pool,
  config: Pick<Config, "partitions" | "retention">,
  nowMs: number = Date.now(),
): Promise<string[]> {
  return [
    ...(await ensureAttemptPartitions(pool, config.partitions, config.retention.attemptsMs, nowMs)),
    ...(await ensureMessagePartitions(pool, config.partitions, config.retention.payloadMs, nowMs)),
  ];
}

/**
 * Creates the missing periods of messages and deliveries from now to `aheadMs` from now,
 * and those of rows waiting in the default partitions that are younger than `keepMs` (the
 * payload retention: older ones are held rows, or retention's); returns the names created.
 */
export async function ensureMessagePartitions(
  pool: Pool,
  config: PartitionConfig,
  keepMs: number,
  nowMs: number = Date.now(),
): Promise<string[]> {
  if (!(await mayManagePartitions(pool))) return [];
  const step = INTERVAL_MS[config.interval];
  // the default partitions are small: rows wait there until their period exists, and the
  // backlog of dropped periods stays there
  const { rows } = await pool.query<{ start: string }>(
    `select distinct (message_ms / $2::bigint) * $2::bigint as start from messages_default
     where message_ms >= $1::bigint
     union
     select distinct (message_ms / $2::bigint) * $2::bigint from deliveries_default
     where message_ms >= $1::bigint`,
    [Math.max(1, nowMs - keepMs), step],
  );
  const created: string[] = [];
  for (const start of periodsToEnsure(
    rows.map((r) => Number(r.start)),
    config,
    nowMs,
  )) {
    // each table's period in a transaction of its own (one default partition locked at a
    // time, see createPeriod); a message whose period exists before its deliveries' has them
    // in deliveries_default for those milliseconds, and the next creation moves them
    for (const table of TABLES) {
      for (const [lo, hi] of uncovered(start, start + step, await listPartitions(pool, table))) {
        const name = partitionName(lo, config.interval, table);
        if (await createPeriod(pool, table, name, lo, hi)) created.push(name);
      }
    }
  }
  return created;
}

/**
 * Creates and attaches the period [lo, hi) of `table`, taking over its rows waiting in the
 * default partition. The default partition is locked at once in the mode the attach needs
 * (a lock taken weaker and raised later would deadlock with a statement that read it and
 * then writes it), and before the table the foreign key refers to, which the attach locks
 * to give the partition its foreign key: the result write locks deliveries before
 * endpoints, so the other order would deadlock with it.
 */
async function createPeriod(
  pool: Pool,
  table: (typeof TABLES)[number],
  name: string,
  lo: number,
  hi: number,
): Promise<boolean> {
  return withTransaction(pool, async (client) => {
    await client.query(`set local lock_timeout = '${LOCK_TIMEOUT}'`);
    await client.query("select pg_advisory_xact_lock($1::bigint)", [PARTITION_LOCK]);
    // another process may have made it since this one looked
    if (uncovered(lo, hi, await listPartitions(client, table)).length === 0) return false;
    const cols = await writableColumns(client, table);
    await client.query(
      `create table ${name} (like ${table} including defaults including constraints including generated)${STORAGE[table]}`,
    );
    // the parents have no unique index (it would have to hold message_ms): each partition
    // has its own, as migration 0036 gave the legacy and default ones
    await client.query(`create unique index ${name}_id_key on ${name} (id)`);
    if (table === "deliveries")
      await client.query(
        `create unique index ${name}_message_id_endpoint_id_key on ${name} (message_id, endpoint_id)`,
      );
    // rows without a period wait here, so none arrives between the move and the attach
    await client.query(`lock table ${table}_default in access exclusive mode`);
    await client.query(
      `with moved as (delete from ${table}_default
                      where message_ms >= $1::bigint and message_ms < $2::bigint returning *)
       insert into ${name} (${cols}) select ${cols} from moved`,
      [lo, hi],
    );
    // the parent's other indexes are built by the attach
    await client.query(
      `alter table ${table} attach partition ${name} for values from (${lo}) to (${hi})`,
    );
    return true;
  });
}

/** A dropped period: its partitions, and the rows copied out of it into the default ones. */
export interface DroppedPeriod {
  partitions: DroppedPartition[];
  heldMessages: number;
  heldDeliveries: number;
}

/**
 * Drops every period of messages and deliveries whose end is at or before `cutoffMs`
 * (epoch ms; the payload retention's cutoff), keeping what must outlive it: every message
 * with a delivery queued (pending, retrying, in flight), or dead-lettered less than
 * `deadLetterMs` ago, with all its deliveries. Never the legacy or default partitions
 * (their rows go by the batched deletes), nor any by a role that may not.
 */
export async function dropMessagePartitionsBefore(
  pool: Pool,
  cutoffMs: number,
  deadLetterMs: number,
  options: DropOptions = {},
): Promise<DroppedPeriod[]> {
  if (!(await mayManagePartitions(pool))) return [];
  const patience = options.patience ?? DETACH_PATIENCE;
  const dropped: DroppedPeriod[] = [];
  for (const p of await listPartitions(pool, "messages")) {
    if (p.lo < 1 || p.hi > cutoffMs) continue;
    const names = { messages: p.name, deliveries: p.name.replace(/^messages_/, "deliveries_") };
    // deliveries first: their held rows say which messages are held. A period whose lock
    // stayed taken is left whole for the next run (its messages too: with its deliveries
    // still attached, every message of it would count as held).
    const deliveries = await detachTransaction(pool, patience, (client) =>
      detachDeliveries(client, names.deliveries, deadLetterMs),
    );
    if (deliveries === BUSY) {
      options.onBusy?.(names.deliveries);
      continue;
    }
    // the deliveries detached and this one busy: the messages' period stays attached, to be
    // detached by the next run (which finds the deliveries' gone); the deliveries' table is
    // dropped below
    const messages = await detachTransaction(pool, patience, (client) =>
      detachMessages(client, names.messages, p),
    );
    if (messages === BUSY) options.onBusy?.(names.messages);
    if (deliveries === undefined && (messages === undefined || messages === BUSY)) continue;
    // dropped as tables of their own, one at a time: unlinking the files holds no lock on
    // the parents, and a statement planned before the detach may still lock either table.
    // Never a table still attached: a drop of a partition would skip the held rows' copy.
    const detached = messages === BUSY ? [names.deliveries] : [names.deliveries, names.messages];
    for (const name of detached) await pool.query(`drop table if exists ${name}`);
    const done = messages === BUSY ? undefined : messages;
    dropped.push({
      partitions: [deliveries, done].flatMap((x) => (x ? [x.partition] : [])),
      heldMessages: done?.held ?? 0,
      heldDeliveries: deliveries?.held ?? 0,
    });
  }
  // periods detached by a run that stopped before it dropped them (their held rows were
  // written back in the detach's transaction)
  const { rows: left } = await pool.query<{ name: string }>(
    `select c.relname as name from pg_class c
     where c.relnamespace = (select relnamespace from pg_class where oid = 'messages'::regclass)
       and c.relkind = 'r' and c.relname ~ '^(messages|deliveries)_p[0-9]+$'
       and not exists (select from pg_inherits i where i.inhrelid = c.oid)`,
  );
  for (const { name } of left) {
    await pool.query(`drop table if exists ${name}`);
    dropped.push({ partitions: [{ name, rows: null }], heldMessages: 0, heldDeliveries: 0 });
  }
  return dropped;
}

/** One detached table's estimate of rows, and the rows written back from it. */
interface Detached {
  partition: DroppedPartition;
  held: number;
}

/**
 * Takes the lock a detach of one of `table`'s periods needs: the parent with all its
 * partitions, at once in the mode the detach needs (a lock raised later would deadlock
 * with statements holding a weaker one), and before the table its foreign key refers to,
 * which the detach then locks (SHARE ROW EXCLUSIVE: the partition gets a foreign key of its
 * own): the result write locks deliveries before endpoints, and an endpoint or application
 * deleted in that instant is the one statement taking them the other way. Returns PostgreSQL's estimate of the period's rows, or undefined when it is
 * no longer attached (another process detached it meanwhile).
 */
async function lockForDetach(
  client: PoolClient,
  table: (typeof TABLES)[number],
  name: string,
): Promise<number | null | undefined> {
  // (the lock waits' limit is set by detachTransaction)
  await client.query("select pg_advisory_xact_lock($1::bigint)", [PARTITION_LOCK]);
  const { rows } = await client.query<{ n: string }>(
    `select c.reltuples::bigint as n from pg_class c join pg_inherits i on i.inhrelid = c.oid
     where c.oid = to_regclass($1::text) and i.inhparent = $2::regclass`,
    [name, table],
  );
  if (rows.length === 0) return undefined;
  // The parent alone first (the order of every statement's generic plan: the parent, then
  // its partitions), then the default partition and the period, the two the detach
  // changes, in that order: the floor's upkeep (ops/delivery-floor.ts) reads the default
  // partition, then the periods oldest first, without the parent, so holding the period
  // while waiting for the default partition deadlocked with it. Not every partition: a
  // vacuum of another one (autovacuum's SHARE UPDATE EXCLUSIVE lock on today's period, say)
  // would hold the detach until deadlock_timeout cancelled it, a second or more in which
  // every statement on the table waits behind this lock (docs/history.md, "the drop with
  // the held rows' copy").
  await client.query(`lock table only ${table} in access exclusive mode`);
  await client.query(`lock table ${table}_default in access exclusive mode`);
  await client.query(`lock table ${name} in access exclusive mode`);
  const n = Number(rows[0]!.n);
  return n < 0 ? null : n;
}

/**
 * Detaches one period of deliveries, first copying out every delivery of a message that
 * has one queued (pending, retrying, in flight) or dead-lettered less than `deadLetterMs`
 * ago (the partial indexes `where queued` and `where dead_lettered` hold just those), and
 * writing the copies back through the parent once the period is gone: they land in
 * deliveries_default, with their ids, states and claims. Nothing reads or writes
 * deliveries meanwhile: the copy reads the period's backlog, the rest is catalog work.
 */
async function detachDeliveries(
  client: PoolClient,
  name: string,
  deadLetterMs: number,
): Promise<Detached | undefined> {
  const rows = await lockForDetach(client, "deliveries", name);
  if (rows === undefined) return undefined;
  const cols = await writableColumns(client, "deliveries");
  await client.query("create temp table hookrelay_held (like deliveries) on commit drop");
  const { rowCount } = await client.query(
    `insert into hookrelay_held (${cols})
     select ${cols} from ${name} d
     where d.message_id in (
       select q.message_id from ${name} q where q.queued
       union
       select q.message_id from ${name} q
       where q.dead_lettered and q.updated_at >= now() - $1::bigint * interval '1 millisecond')`,
    [deadLetterMs],
  );
  await client.query(`alter table deliveries detach partition ${name}`);
  // their period is gone: they land in deliveries_default
  await client.query(`insert into deliveries (${cols}) select ${cols} from hookrelay_held`);
  return { partition: { name, rows }, held: rowCount ?? 0 };
}

/**
 * Detaches one period of messages, after its deliveries' (detachDeliveries): a message is
 * held when any delivery of it is left, which is then in deliveries_default (held, or
 * written since by a replay or a resend, which lock the message first and so wait for
 * this). The held messages are written back through the parent into messages_default.
 */
async function detachMessages(
  client: PoolClient,
  name: string,
  period: { lo: number; hi: number },
): Promise<Detached | undefined> {
  const rows = await lockForDetach(client, "messages", name);
  if (rows === undefined) return undefined;
  const cols = await writableColumns(client, "messages");
  await client.query("create temp table hookrelay_held (like messages) on commit drop");
  const { rowCount } = await client.query(
    `insert into hookrelay_held (${cols})
     select ${cols} from ${name} m
     where m.id in (select d.message_id from deliveries d
                    where d.message_ms >= $1::bigint and d.message_ms < $2::bigint)`,
    [period.lo, period.hi],
  );
  await client.query(`alter table messages detach partition ${name}`);
  await client.query(`insert into messages (${cols}) select ${cols} from hookrelay_held`);
  return { partition: { name, rows }, held: rowCount ?? 0 };
}
