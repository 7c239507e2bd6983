/**
 * Background tasks as the API sees them (docs/recovery.md): making one (checked against
 * the endpoint's running replays, or counted at once for a dry run), reading, listing and
 * canceling. The runner's own statements are replay-batch.ts's.
 *
 * A task's states:
 *
 * | from     | to       | when                                                        |
 * | (new)    | running  | made (POST .../recover, .../replay-missing, .../bulk-replay) |
 * | (new)    | finished | made as a dry run: counted, nothing sent                    |
 * | running  | finished | its runner's batch reached the end of the window             |
 * | running  | canceled | POST /background-task/{id}/cancel (between two batches)     |
 * | running  | failed   | a batch failed for a reason other than the database being   |
 * |          |          | unreachable (the error is kept)                             |
 */
import { namedSql } from "../db/named-sql.ts";
import { type Pool, type Queryable, withTransaction } from "../db/pool.ts";
import type { PageWindow } from "../db/queries/page-window.ts";
import { effectiveSql } from "../domain/endpoint-policy-derived.ts";
import { ID_PREFIX, newId } from "../ids.ts";
import { type ReplayFilters, scanCtes, type TaskKind } from "./replay-scan.ts";

export const TASK_STATUSES = ["running", "finished", "failed", "canceled"] as const;
export type TaskStatus = (typeof TASK_STATUSES)[number];

export interface TaskRow {
  id: string;
  kind: TaskKind;
  app_id: string;
  endpoint_id: string;
  status: TaskStatus;
  since: Date;
  until: Date;
  params: ReplayFilters;
  dry_run: boolean;
  rate_per_second: number;
  /** bigint columns arrive as strings */
  total: string | null;
  done: string;
  error: string | null;
  created_at: Date;
  updated_at: Date;
  finished_at: Date | null;
}

const COLUMNS = `id, kind, app_id, endpoint_id, status, since, until, params, dry_run,
  rate_per_second, total, done, error, created_at, updated_at, finished_at`;

export interface NewTask {
  kind: TaskKind;
  appId: string;
  endpointId: string;
  since: Date;
  until: Date;
  filters: ReplayFilters;
  dryRun: boolean;
  /** the caller's pace; null: the endpoint's rate limit, else `defaultRate` */
  ratePerSecond: number | null;
  defaultRate: number;
  createdBy: string | null;
}

/** A task as given, in the shape the scan reads as `t`, from the start of its window. */
const GIVEN_TASK = `t as (
  select $kind::text as kind, $appId::text as app_id, $endpointId::text as endpoint_id,
         $since::timestamptz as since, $until::timestamptz as until, $params::jsonb as params,
         $since::timestamptz as cursor_at, ''::text as cursor_id
)`;

const COUNT_SQL = namedSql<{
  kind: string;
  appId: string;
  endpointId: string;
  since: Date;
  until: Date;
  params: string;
}>(`with ${GIVEN_TASK}, ${scanCtes(null)} select count(*)::bigint as n from cand`);

/** How many messages a task would send: its whole window, one statement, locking nothing. */
export async function countTask(db: Queryable, task: NewTask): Promise<number> {
  const { rows } = await db.query(
    COUNT_SQL.query({
      kind: task.kind,
      appId: task.appId,
      endpointId: task.endpointId,
      since: task.since,
      until: task.until,
      params: JSON.stringify(task.filters),
    }),
  );
  return Number(rows[0].n);
}

export type CreateResult = { ok: true; task: TaskRow } | { ok: false; overlapping: string };

/**
 * Makes a task: a dry run finished at once with its count; otherwise a running task, unless
 * a running task of the same endpoint overlaps its window (two replays would send the same
 * messages twice). The check and the insert hold a transaction lock per endpoint, so two
 * requests at once cannot both pass it.
 */
export async function createTask(pool: Pool, task: NewTask): Promise<CreateResult> {
  if (task.dryRun) {
    const n = await countTask(pool, task);
    return { ok: true, task: await insertTask(pool, task, n) };
  }
  return withTransaction(pool, async (client) => {
    await client.query("select pg_advisory_xact_lock(hashtext('hookrelay-replay'), hashtext($1))", [
      task.endpointId,
    ]);
    const { rows } = await client.query(
      `select id from background_tasks
       where endpoint_id = $1::text and status = 'running'
         and since < $3::timestamptz and $2::timestamptz < until
       limit 1`,
      [task.endpointId, task.since, task.until],
    );
    if (rows[0]) return { ok: false, overlapping: rows[0].id as string };
    return { ok: true, task: await insertTask(client, task, null) };
  });
}

async function insertTask(db: Queryable, task: NewTask, counted: number | null): Promise<TaskRow> {
  const { rows } = await db.query<TaskRow>(
    `insert into background_tasks (id, kind, app_id, endpoint_id, status, since, until, params,
                                   dry_run, rate_per_second, total, cursor_at, created_by,
                                   finished_at)
     select $1::text, $2::text, e.app_id, e.id,
            case when $7::boolean then 'finished' else 'running' end,
            $4::timestamptz, $5::timestamptz, $6::jsonb, $7::boolean,
            -- the caller's pace, else the endpoint's strictest rate limit (least() skips
            -- nulls), else the process default
            coalesce($8::float8,
                     least(${effectiveSql("e", "ratePerSecond")}::float8,
                           e.rate_per_minute / 60.0, e.rate_per_hour / 3600.0),
                     $9::float8),
            $10::bigint, $4::timestamptz, $11::text,
            case when $7::boolean then now() end
     from endpoints e where e.id = $3::text
     returning ${COLUMNS}`,
    [
      newId(ID_PREFIX.backgroundTask),
      task.kind,
      task.endpointId,
      task.since,
      task.until,
      JSON.stringify(task.filters),
      task.dryRun,
      task.ratePerSecond,
      task.defaultRate,
      counted,
      task.createdBy,
    ],
  );
  return rows[0]!;
}

/** One task, within `appId`'s reach when given (an app-scoped key); null if none. */
export async function getTask(
  db: Queryable,
  id: string,
  appId: string | null,
): Promise<TaskRow | null> {
  const { rows } = await db.query<TaskRow>(
    `select ${COLUMNS} from background_tasks
     where id = $1::text and ($2::text is null or app_id = $2::text)`,
    [id, appId],
  );
  return rows[0] ?? null;
}

export interface TaskFilter {
  appId: string | null;
  status: TaskStatus | null;
  kind: TaskKind | null;
  /** one endpoint's tasks only */
  endpointId: string | null;
  /** dry runs only (true) or real replays only (false) */
  dryRun: boolean | null;
}

/** A page of tasks in id (creation) order. */
export async function listTasks(
  db: Queryable,
  filter: TaskFilter,
  page: PageWindow,
): Promise<TaskRow[]> {
  const { rows } = await db.query<TaskRow>(
    `select ${COLUMNS} from background_tasks
     where ($1::text is null or app_id = $1::text)
       and ($2::text is null or status = $2::text)
       and ($3::text is null or kind = $3::text)
       and ($4::text is null or id ${page.op} $4::text)
       and ($6::text is null or endpoint_id = $6::text)
       and ($7::boolean is null or dry_run = $7::boolean)
     order by id ${page.direction} limit $5::integer`,
    [
      filter.appId,
      filter.status,
      filter.kind,
      page.cursor,
      page.limit,
      filter.endpointId,
      filter.dryRun,
    ],
  );
  return rows;
}

/**
 * Cancels a running task: its runner stops before its next batch (each batch locks the
 * task's row, so a cancel waits at most for the batch under way). The task as it is
 * afterwards, or null if there is none in reach.
 */
export async function cancelTask(
  db: Queryable,
  id: string,
  appId: string | null,
): Promise<TaskRow | null> {
  const { rows } = await db.query<TaskRow>(
    `update background_tasks
     set status = 'canceled', lease_holder = null, lease_until = null,
         updated_at = now(), finished_at = now()
     where id = $1::text and ($2::text is null or app_id = $2::text) and status = 'running'
     returning ${COLUMNS}`,
    [id, appId],
  );
  return rows[0] ?? getTask(db, id, appId);
}

/**
 * Event types a bulk replay's filter names that hookrelay has never heard of: neither in
 * the catalogue (GET /event-type) nor on any message of the app in the window.
 */
export async function unknownEventTypes(
  db: Queryable,
  appId: string,
  names: string[],
  window: { since: Date; until: Date },
): Promise<string[]> {
  const { rows } = await db.query(
    `select n.name from unnest($1::text[]) as n(name)
     where not exists (select 1 from event_types et where et.name = n.name)
       and not exists (
         select 1 from messages m
         where m.app_id = $2::text and m.created_at >= $3::timestamptz
           and m.created_at < $4::timestamptz and m.event_type = n.name)`,
    [names, appId, window.since, window.until],
  );
  return rows.map((r) => r.name as string);
}
