/**
 * The replay runner's statements (docs/recovery.md), each its own short transaction: take
 * a running task under a lease, count its total, run one batch, look at the endpoint's
 * backlog of replayed rows, renew or give up the lease, record a failure. No statement
 * holds a lock past its own end, and a batch touches at most `batch` delivery rows.
 */
import { namedSql } from "../db/named-sql.ts";
import type { Queryable } from "../db/pool.ts";
import { lowerFloorSql } from "../db/sql/delivery-floor.ts";
import { requeueSet } from "../db/sql/delivery-states.ts";
import { orderingKeySql } from "../db/sql/ordering-key.ts";
import { WORK_CHANNEL } from "../db/work-channel.ts";
import { effectiveSql } from "../domain/endpoint-policy-derived.ts";
import type { TaskStatus } from "./background-tasks.ts";
import { scanCtes } from "./replay-scan.ts";

/** A task as its runner holds it. */
export interface TakenTask {
  id: string;
  endpointId: string;
  ratePerSecond: number;
  total: number | null;
}

const TAKE_SQL = namedSql<{ holder: string; leaseMs: number; busy: string[] }>(`
update background_tasks t
set lease_holder = $holder::text,
    lease_until = now() + $leaseMs::integer * interval '1 millisecond',
    updated_at = now()
where t.id = (
  select b.id from background_tasks b
  where b.status = 'running'
    and not (b.id = any ($busy::text[]))
    -- free, lapsed (its runner stopped or died), or this runner's own from before
    and (b.lease_until is null or b.lease_until < now() or b.lease_holder = $holder::text)
  order by b.created_at
  limit 1
  -- two runners looking at once take different tasks
  for update skip locked)
returning t.id, t.endpoint_id, t.rate_per_second, t.total`);

/** Takes the oldest running task no live runner holds (none of `busy`); null if none. */
export async function takeTask(
  db: Queryable,
  holder: string,
  leaseMs: number,
  busy: string[],
): Promise<TakenTask | null> {
  const { rows } = await db.query(TAKE_SQL.query({ holder, leaseMs, busy }));
  const r = rows[0];
  if (!r) return null;
  return {
    id: r.id,
    endpointId: r.endpoint_id,
    ratePerSecond: Number(r.rate_per_second),
    total: r.total === null ? null : Number(r.total),
  };
}

/**
 * Counts what the task matches over its whole window (from its start, whatever its cursor)
 * and stores it as its total, once. One read of the window, locking nothing but the row.
 */
export async function countTotal(db: Queryable, id: string): Promise<number | null> {
  const { rows } = await db.query(
    `with t as (
       select kind, app_id, endpoint_id, since, until, params,
              since as cursor_at, ''::text as cursor_id
       from background_tasks where id = $1::text
     ), ${scanCtes(null)}
     update background_tasks set total = (select count(*) from cand), updated_at = now()
     where id = $1::text and total is null
     returning total`,
    [id],
  );
  return rows[0] ? Number(rows[0].total) : null;
}

export interface BatchParams {
  id: string;
  holder: string;
  leaseMs: number;
  /** most rows made due by this batch */
  batch: number;
  /** most messages looked at by this batch */
  scan: number;
  /** the attempt budget of an endpoint without its own (HOOKRELAY_MAX_ATTEMPTS) */
  defaultMaxAttempts: number;
}

export interface BatchResult {
  /** the task's status after the batch */
  status: TaskStatus;
  /** rows made due (requeued or inserted) by this batch */
  sent: number;
  /** rows taken (sent, or skipped because they changed meanwhile) */
  picked: number;
  /** messages looked at */
  scanned: number;
}

// One statement: the task's row locked (a cancel waits for the batch, and a batch after a
// cancel finds no running task and does nothing); the next messages from the cursor and
// the rows the task takes, the first `batch` of them made due again at the task's pace
// (row n at now() + n / rate); the cursor moved on and the progress stored; the task
// finished when its window is done. Rows are requeued only if still in the status they
// were read in (a worker's result written meanwhile wins).
const BATCH_SQL = namedSql<Omit<BatchParams, "id"> & { taskId: string }>(`
with t as (
  select * from background_tasks
  where id = $taskId::text and status = 'running' and lease_holder = $holder::text
  for update
),
${scanCtes("$scan::integer")},
picked as (
  select * from cand where rn <= $batch::integer
),
em as (
  select e.id, ${effectiveSql("e", "maxAttempts")} as max_attempts, e.ordering
  from endpoints e join t on e.id = t.endpoint_id
),
requeued as (
  update deliveries d
  set ${requeueSet({
    maxAttempts: "em.max_attempts",
    dueAt: "now() + (p.rn - 1) / t.rate_per_second * interval '1 second'",
    trigger: "replay",
  })},
      requeued_at = now(), requeued_by = t.id
  from picked p, t, em
  where d.id = p.delivery_id and d.message_ms = p.message_ms and d.status = p.status
  returning d.id, d.message_ms
),
-- the messages new rows are written for, locked as a foreign key would (retention deletes
-- a message's deliveries itself: src/ops/retention.ts); one deleted meanwhile drops out
kept as (
  select m.id, m.message_ms from messages m
  where (m.id, m.message_ms) in (select p.message_id, p.message_ms from picked p
                                 where p.delivery_id is null)
  for key share
),
inserted as (
  insert into deliveries (message_id, endpoint_id, app_id, max_attempts, next_attempt_at, trigger,
                          ordering_key, message_ms)
  select p.message_id, t.endpoint_id, t.app_id, em.max_attempts,
         now() + (p.rn - 1) / t.rate_per_second * interval '1 second', 'replay',
         -- a new row of an ordered message takes its key's place by when it is written
         ${orderingKeySql("em", "(select m.ordering_key from messages m where m.id = p.message_id and m.message_ms = p.message_ms)")},
         p.message_ms
  from picked p join kept k on k.id = p.message_id and k.message_ms = p.message_ms, t, em
  where p.delivery_id is null
  -- (the partition's unique (message_id, endpoint_id): a message's rows share its partition)
  on conflict do nothing
  returning id, message_ms
),
-- the claim reads the queue from the floor up (db/sql/delivery-floor.ts)
floor as (${lowerFloorSql(`(select min(u.ms) from (select message_ms as ms from requeued
                                                    union all select message_ms from inserted) u)`)}),
st as (
  select (select count(*) from requeued) + (select count(*) from inserted) as sent,
         (select count(*) from picked) as picked,
         (select count(*) from scanned) as scanned
),
-- where the next batch starts: after the batch's last row when the batch is full (the
-- rest of this scan is looked at again), else after the last message looked at
nxt as (
  select c.created_at, c.id from (
    select p.created_at, p.message_id as id, 0 as pref from picked p where p.rn = $batch::integer
    union all
    select s.created_at, s.id, 1 from scanned s
  ) c
  order by c.pref, c.created_at desc, c.id desc
  limit 1
),
moved as (
  update background_tasks b
  set done = b.done + st.sent,
      cursor_at = coalesce((select created_at from nxt), b.cursor_at),
      cursor_id = coalesce((select id from nxt), b.cursor_id),
      status = case when st.scanned < $scan::integer and st.picked < $batch::integer
                    then 'finished' else b.status end,
      finished_at = case when st.scanned < $scan::integer and st.picked < $batch::integer
                         then now() end,
      lease_until = now() + $leaseMs::integer * interval '1 millisecond',
      updated_at = now()
  from st
  where b.id = (select id from t)
  returning b.status
)
select m.status, st.sent::int, st.picked::int, st.scanned::int,
       case when st.sent > 0 then pg_notify('${WORK_CHANNEL}', '') end
from moved m, st`);

/**
 * Runs one batch of the task. Null when the task is no longer this runner's to run:
 * canceled, finished, or its lease taken over by another runner.
 */
export async function runBatch(db: Queryable, p: BatchParams): Promise<BatchResult | null> {
  const { id, ...rest } = p;
  const { rows } = await db.query(BATCH_SQL.query({ ...rest, taskId: id }));
  const r = rows[0];
  if (!r) return null;
  return { status: r.status, sent: r.sent, picked: r.picked, scanned: r.scanned };
}

/**
 * How many replayed rows of the endpoint are still queued (due or not), counting up to
 * `upTo`: the runner waits while a batch's worth is ahead of the worker.
 */
export async function queuedReplays(
  db: Queryable,
  endpointId: string,
  upTo: number,
): Promise<number> {
  const { rows } = await db.query(
    `select count(*)::int as n from (
       select 1 from deliveries
       where endpoint_id = $1::text and queued and trigger = 'replay'
       limit $2::integer) x`,
    [endpointId, upTo],
  );
  return rows[0].n;
}

/** Extends the lease while the runner waits; false when the task is no longer its to run. */
export async function renewLease(
  db: Queryable,
  id: string,
  holder: string,
  leaseMs: number,
): Promise<boolean> {
  const { rowCount } = await db.query(
    `update background_tasks
     set lease_until = now() + $3::integer * interval '1 millisecond'
     where id = $1::text and lease_holder = $2::text and status = 'running'`,
    [id, holder, leaseMs],
  );
  return rowCount === 1;
}

/** Gives the task up (a stopping runner): any runner may take it at once. */
export async function releaseTask(db: Queryable, id: string, holder: string): Promise<void> {
  await db.query(
    `update background_tasks set lease_holder = null, lease_until = null, updated_at = now()
     where id = $1::text and lease_holder = $2::text`,
    [id, holder],
  );
}

/** Ends the task as failed, keeping why. */
export async function failTask(
  db: Queryable,
  id: string,
  holder: string,
  error: string,
): Promise<void> {
  await db.query(
    `update background_tasks
     set status = 'failed', error = $3::text, lease_holder = null, lease_until = null,
         finished_at = now(), updated_at = now()
     where id = $1::text and lease_holder = $2::text and status = 'running'`,
    [id, holder, error],
  );
}
