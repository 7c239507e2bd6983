/** Applications (tenants): the rows behind /api/v1/app. */
import type { Queryable } from "../pool.ts";
import { tablePrefix } from "../schema-name.ts";
import type { PageWindow } from "./page-window.ts";

export interface AppRow {
  id: string;
  uid: string | null;
  name: string;
  rate_limit: number | null;
  metadata: Record<string, string>;
  /** the egress pool its endpoints use unless they name their own (docs/egress.md) */
  egress_pool: string | null;
  created_at: Date;
  updated_at: Date;
}

const COLUMNS = "id, uid, name, rate_limit, metadata, egress_pool, created_at, updated_at";

/**
 * The app ids named by each of `idsOrUids` (an id, or a uid). An id never loses to a uid:
 * when one app's uid is another app's id, the name means the latter.
 */
export async function appIdsByIdOrUid(
  db: Queryable,
  idsOrUids: readonly string[],
  /** the tables' schema, named in the statement (the library's); default: the search_path */
  schema?: string,
): Promise<Map<string, string>> {
  const { rows } = await db.query<{ id: string; uid: string | null }>({
    name: `hookrelay_resolve_apps${schema === undefined ? "" : `_${schema}`}`,
    text: `select id, uid from ${tablePrefix(schema)}applications where id = any ($1::text[]) or uid = any ($1::text[])`,
    values: [idsOrUids],
  });
  const found = new Map<string, string>();
  for (const r of rows) if (r.uid) found.set(r.uid, r.id);
  for (const r of rows) found.set(r.id, r.id);
  return found;
}

export async function getApp(db: Queryable, id: string): Promise<AppRow | null> {
  const { rows } = await db.query<AppRow>(
    `select ${COLUMNS} from applications where id = $1::text`,
    [id],
  );
  return rows[0] ?? null;
}

export async function getAppByUid(db: Queryable, uid: string): Promise<AppRow | null> {
  const { rows } = await db.query<AppRow>(
    `select ${COLUMNS} from applications where uid = $1::text`,
    [uid],
  );
  return rows[0] ?? null;
}

/** A page of apps in id order; `onlyId` limits it to that app (an app-scoped key). */
export async function listApps(
  db: Queryable,
  page: PageWindow,
  onlyId: string | null,
): Promise<AppRow[]> {
  const { rows } = await db.query<AppRow>(
    `select ${COLUMNS} from applications
     where ($1::text is null or id ${page.op} $1::text) and ($2::text is null or id = $2::text)
     order by id ${page.direction} limit $3::integer`,
    [page.cursor, onlyId, page.limit],
  );
  return rows;
}

export interface NewApp {
  id: string;
  uid: string | null;
  name: string;
  rateLimit: number | null;
  metadata: Record<string, string>;
  egressPool?: string | null;
}

/** Inserts an app; a taken uid fails with PostgreSQL's unique violation (23505). */
export async function insertApp(db: Queryable, app: NewApp): Promise<AppRow> {
  const { rows } = await db.query<AppRow>(
    `insert into applications (id, uid, name, rate_limit, metadata, egress_pool)
     values ($1::text, $2::text, $3::text, $4::integer, $5::jsonb, $6::text) returning ${COLUMNS}`,
    [
      app.id,
      app.uid,
      app.name,
      app.rateLimit,
      JSON.stringify(app.metadata),
      app.egressPool ?? null,
    ],
  );
  return rows[0]!;
}

/** The fields of an app an update may set; undefined leaves the column as it is. */
export interface AppChanges {
  name?: string;
  uid?: string | null;
  rateLimit?: number | null;
  metadata?: Record<string, string>;
  egressPool?: string | null;
}

/** Updates the fields given; null when there is no such app. A taken uid fails with 23505. */
export async function updateApp(
  db: Queryable,
  id: string,
  changes: AppChanges,
): Promise<AppRow | null> {
  // Five fixed columns: each takes its parameter when its flag ($6..$9, $11) says it was given.
  const { rows } = await db.query<AppRow>(
    `update applications set
       name = case when $6::boolean then $2::text else name end,
       uid = case when $7::boolean then $3::text else uid end,
       rate_limit = case when $8::boolean then $4::integer else rate_limit end,
       metadata = case when $9::boolean then $5::jsonb else metadata end,
       egress_pool = case when $11::boolean then $10::text else egress_pool end,
       updated_at = now()
     where id = $1::text returning ${COLUMNS}`,
    [
      id,
      changes.name ?? null,
      changes.uid ?? null,
      changes.rateLimit ?? null,
      JSON.stringify(changes.metadata ?? {}),
      changes.name !== undefined,
      changes.uid !== undefined,
      changes.rateLimit !== undefined,
      changes.metadata !== undefined,
      changes.egressPool ?? null,
      changes.egressPool !== undefined,
    ],
  );
  return rows[0] ?? null;
}

/** Deletes an app and everything of it (attempts by hand: they have no foreign key). */
export async function deleteApp(db: Queryable, id: string): Promise<void> {
  // attempts carry no foreign key (they are inserted on the hot path), so the cascade from
  // applications does not reach them
  await db.query(
    `with attempts_gone as (
       delete from attempts where endpoint_id in (select id from endpoints where app_id = $1::text)
     )
     delete from applications where id = $1::text`,
    [id],
  );
}
