/**
 * Retention: attempts go a whole partition at a time (src/ops/attempt-partitions.ts,
 * docs/history.md): a period is dropped once every id it can hold is older than the age,
 * so an attempt is kept between attemptsMs and attemptsMs + one partition interval, and
 * dropping a day writes next to no WAL and leaves nothing to vacuum. What no drop takes is
 * deleted in small batches: rows of the legacy partition (written before the layout),
 * rows of the default partition, and rows written with a created_at older than their id.
 *
 * The rest of the history is deleted in small batches (each its own short statement, found
 * through BRIN or partial indexes), so a purge of millions of rows never holds locks that
 * stall the queue. Only finished work is touched: a message goes only when none of its
 * deliveries is still pending, retrying, in flight or dead-lettered.
 *
 * | what                         | kept for (default)                       |
 * | attempts                     | 30 days (HOOKRELAY_RETENTION_ATTEMPTS_MS) |
 * | delivered messages, payloads | 30 days (HOOKRELAY_RETENTION_PAYLOAD_MS)  |
 * | dead letters                 | 30 days unless requeued (..._DEAD_LETTER_MS) |
 * | latency samples              | the latency window, 24 h (src/health/latency-stats.ts) |
 *
 * A message created with its own retention (Svix's payloadRetentionPeriod or
 * payloadRetentionHours: messages.expires_at) goes when that passes, if that comes first:
 * its dead letters with it (such a message can no longer be requeued), never while a
 * delivery of it is still pending, retrying or in flight.
 */
import type { RetentionConfig } from "../config.ts";
import type { Pool } from "../db/pool.ts";
import { LEGACY_ATTEMPT_ID_END } from "../db/sql/attempt-ids.ts";
import {
  DETACH_PATIENCE,
  type DetachPatience,
  type DroppedPartition,
  dropAttemptPartitionsBefore,
  mayManagePartitions,
} from "./attempt-partitions.ts";
import { deleteGoneDeliveryIdBlocks } from "./delivery-id-blocks.ts";
import { dropMessagePartitionsBefore } from "./message-partitions.ts";
import type { PartitionOwner } from "./partition-owner.ts";

export interface PurgeProgress {
  what: "attempts" | "dead_letters" | "messages";
  deleted: number;
}

/**
 * A batch of dead letters past their age, or of messages past their own retention, in two
 * disjoint parts each read through an index from its first match: the dead letters' index
 * on updated_at from the oldest, and the messages' on expires_at (then each such message's
 * deliveries by its id). Both read about as many entries as they delete. Written as one
 * filter (past the age, or its message expired) the scan read every dead letter of the
 * history, and probed its message, whenever fewer than a batch were due: 2.4 s a run over
 * scenario 19's month of history (docs/performance.md, "Scenario 19 at full size, and retention's dead letters").
 * (By id: ctid is not unique across partitions.)
 */
export const DEAD_LETTER_PURGE_SQL = `delete from deliveries where id = any (array(
            select d.id from deliveries d
            where d.dead_lettered and d.updated_at < now() - $1::bigint * interval '1 millisecond'
            union all
            select d.id from messages m
            join deliveries d on d.message_id = m.id and d.message_ms = m.message_ms
            where m.expires_at <= now()
              and d.dead_lettered and d.updated_at >= now() - $1::bigint * interval '1 millisecond'
            limit $2::integer))`;

const PURGES: ReadonlyArray<{
  what: PurgeProgress["what"];
  age: (r: RetentionConfig) => number;
  sql: string;
}> = [
  {
    what: "attempts",
    age: (r) => r.attemptsMs,
    // The rows no partition drop takes (the module comment), in four disjoint parts: the
    // legacy partition's (its BRIN index on created_at); rows of the periods whose
    // created_at is older than their id (each period's partial index, migration 0026); the
    // default partition's; and, only for a role that may not drop partitions ($3), the
    // periods' other rows past the age. Never the rows of a period whose id says they are
    // older than the age when the drop will take them. UNION ALL under the limit: the scan
    // stops at `batch` rows (a UNION would read every match first). By id: ctid is not
    // unique across partitions.
    sql: `delete from attempts where id = any (array(
            select id from attempts
            where id < ${LEGACY_ATTEMPT_ID_END} and created_at < now() - $1::bigint * interval '1 millisecond'
            union all
            select id from attempts
            where id >= ${LEGACY_ATTEMPT_ID_END} and created_at < now() - $1::bigint * interval '1 millisecond'
              and created_at < hookrelay_attempt_time(id - 7549747200)
              and tableoid <> 'attempts_default'::regclass
            union all
            select id from attempts_default
            where created_at < now() - $1::bigint * interval '1 millisecond'
            union all
            select id from attempts
            where $3::boolean and id >= ${LEGACY_ATTEMPT_ID_END}
              and id < hookrelay_attempt_id_at(now() - $1::bigint * interval '1 millisecond')
              and created_at >= hookrelay_attempt_time(id - 7549747200)
              and tableoid <> 'attempts_default'::regclass
            limit $2::integer))`,
  },
  {
    what: "dead_letters",
    age: (r) => r.deadLetterMs,
    sql: DEAD_LETTER_PURGE_SQL,
  },
  {
    what: "messages",
    age: (r) => r.payloadMs,
    // deliveries of these messages (all delivered or canceled) go with them, and their
    // eventIds (migration 0033), which a new message may then take again. (No foreign key
    // cascades since messages are partitioned: migration 0036.) The rows no period drop
    // takes (message-partitions.ts), in four parts as the attempts' above: the legacy
    // partition's past the age (its BRIN index), the default partition's (rows that waited
    // for their period, and the backlog held past a dropped one), messages past their own
    // retention (the partial index on expires_at) younger than the age, and only for a role
    // that may not drop periods ($3), the periods' rows past the age. Disjoint, so a batch
    // counts its rows once. Never the rows of a period past the age when the drop will take
    // it whole.
    sql: `with gone as (
            delete from messages x using (
              select m.id, m.message_ms from (
                select id, message_ms from messages
                where message_ms < 1 and created_at < now() - $1::bigint * interval '1 millisecond'
                union all
                select id, message_ms from messages_default
                where created_at < now() - $1::bigint * interval '1 millisecond'
                union all
                select id, message_ms from messages
                where expires_at <= now() and created_at >= now() - $1::bigint * interval '1 millisecond'
                union all
                select id, message_ms from messages
                where $3::boolean and message_ms >= 1
                  and created_at < now() - $1::bigint * interval '1 millisecond'
                  and tableoid <> 'messages_default'::regclass) m
              where not exists (
                  select 1 from deliveries d
                  where d.message_id = m.id and d.message_ms = m.message_ms
                    and (d.queued or d.dead_lettered))
              limit $2::integer) g
            where x.id = g.id and x.message_ms = g.message_ms
            returning x.id, x.app_id, x.event_id, x.message_ms),
          rows_gone as (
            delete from deliveries d using gone g
            where d.message_id = g.id and d.message_ms = g.message_ms),
          keys as (
            delete from message_event_ids k using gone g
            where g.event_id is not null and k.app_id = g.app_id and k.event_id = g.event_id)
          select count(*)::int as n, coalesce(array_agg(id), '{}') as ids from gone`,
  },
];

/**
 * The deliveries a replay or a resend wrote for these messages while they were being
 * deleted: the purge's own delete of their deliveries could not see them (its snapshot was
 * taken before). Those writers lock the message (FOR KEY SHARE) before writing, so the
 * purge's delete of the message waited for them to commit, and this next statement sees
 * what they wrote. (A writer that came second finds the message gone and writes nothing.)
 * Without it such a delivery would outlive its message, which no foreign key deletes since
 * messages are partitioned (docs/history.md), and the claim would take it again and again.
 */
async function deleteLateDeliveries(pool: Pool, messageIds: string[]): Promise<void> {
  await pool.query("delete from deliveries where message_id = any ($1::text[])", [messageIds]);
}

export type PurgeTotals = Record<PurgeProgress["what"], number>;

/** Runs every purge to completion, batch by batch; `onProgress` hears after each batch. */
export async function purgeExpired(
  pool: Pool,
  retention: RetentionConfig,
  onProgress?: (p: PurgeProgress) => void,
): Promise<PurgeTotals> {
  return (await purgeExpiredUntil(pool, retention, Number.POSITIVE_INFINITY, onProgress)).deleted;
}

/** What a purge did: `done` when every batched delete ran dry before `until`. */
export interface PurgeResult {
  deleted: PurgeTotals;
  done: boolean;
  droppedPartitions: DroppedPartition[];
  /** periods left attached because statements under way held their lock: the next run's */
  busyPartitions: string[];
}

/**
 * Purges batch by batch until everything due is gone or the clock passes `until` (epoch
 * ms, checked after each batch): a caller that must answer soon (the purge API route)
 * runs it in slices and calls again while `done` is false. Partitions are dropped through
 * `owner` (src/ops/partition-owner.ts; default `pool`); null, or a role that may not drop
 * them: none is, and retention deletes the periods' rows past the age in batches instead.
 */
export async function purgeExpiredUntil(
  pool: Pool,
  retention: RetentionConfig,
  until: number,
  onProgress?: (p: PurgeProgress) => void,
  owner: PartitionOwner = pool,
  patience: DetachPatience = DETACH_PATIENCE,
): Promise<PurgeResult> {
  const deleted = { attempts: 0, dead_letters: 0, messages: 0 };
  // periods whose detach never got its lock (statements under way held it): the next run
  // drops them (attempt-partitions.ts, DetachPatience)
  const busyPartitions: string[] = [];
  const drop = { patience, onBusy: (name: string) => busyPartitions.push(name) };
  // the database's clock, as the deletes below use
  const { rows } = await pool.query<{ cutoff: Date; payloadCutoff: Date }>(
    `select now() - $1::bigint * interval '1 millisecond' as cutoff,
            now() - $2::bigint * interval '1 millisecond' as "payloadCutoff"`,
    [retention.attemptsMs, retention.payloadMs],
  );
  const drops = owner !== null && (await mayManagePartitions(owner));
  const droppedPartitions = drops
    ? await dropAttemptPartitionsBefore(owner, rows[0]!.cutoff.getTime(), drop)
    : [];
  // messages and deliveries by period too, their backlog kept (message-partitions.ts)
  if (drops) {
    const periods = await dropMessagePartitionsBefore(
      owner,
      rows[0]!.payloadCutoff.getTime(),
      retention.deadLetterMs,
      drop,
    );
    for (const p of periods) droppedPartitions.push(...p.partitions);
  }
  const rowByRow = !drops;
  for (const purge of PURGES) {
    for (;;) {
      const params: unknown[] = [purge.age(retention), retention.batch];
      if (purge.what !== "dead_letters") params.push(rowByRow);
      const { rows: answer, rowCount } = await pool.query<{ n?: number; ids?: string[] }>(
        purge.sql,
        params,
      );
      // a delete answers with its count; a statement of several, with a row saying it
      const n = answer[0]?.n ?? rowCount ?? 0;
      if (purge.what === "messages" && n > 0) await deleteLateDeliveries(pool, answer[0]!.ids!);
      deleted[purge.what] += n;
      if (n > 0) onProgress?.({ what: purge.what, deleted: deleted[purge.what] });
      if (n < retention.batch) break;
      if (Date.now() >= until) return { deleted, done: false, droppedPartitions, busyPartitions };
    }
  }
  // the id blocks of deliveries no longer stored (delivery-id-blocks.ts)
  await deleteGoneDeliveryIdBlocks(pool);
  return { deleted, done: true, droppedPartitions, busyPartitions };
}
