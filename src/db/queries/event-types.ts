/** The catalogue of event types: the rows behind /api/v1/event-type. */
import type { Queryable } from "../pool.ts";
import type { PageWindow } from "./page-window.ts";

export interface EventTypeRow {
  name: string;
  description: string;
  archived: boolean;
  deprecated: boolean;
  /** the schemas' JSON text as sent */
  schemas: string | null;
  group_name: string | null;
  feature_flags: string[] | null;
  created_at: Date;
  updated_at: Date;
}

const COLUMNS =
  "name, description, archived, deprecated, schemas, group_name, feature_flags, created_at, updated_at";

/** Every field of an event type but its timestamps. */
export type EventTypeFields = Omit<EventTypeRow, "created_at" | "updated_at">;

/** A page of event types in name order; archived ones only with `includeArchived`. */
export async function listEventTypes(
  db: Queryable,
  includeArchived: boolean,
  page: PageWindow,
): Promise<EventTypeRow[]> {
  const { rows } = await db.query<EventTypeRow>(
    `select ${COLUMNS} from event_types
     where ($1::text is null or name ${page.op} $1::text) and ($3::boolean or not archived)
     order by name ${page.direction} limit $2::integer`,
    [page.cursor, page.limit, includeArchived],
  );
  return rows;
}

export async function getEventType(db: Queryable, name: string): Promise<EventTypeRow | null> {
  const { rows } = await db.query<EventTypeRow>(
    `select ${COLUMNS} from event_types where name = $1::text`,
    [name],
  );
  return rows[0] ?? null;
}

const fieldParams = (t: EventTypeFields) => [
  t.name,
  t.description,
  t.archived,
  t.deprecated,
  t.schemas,
  t.group_name,
  t.feature_flags,
];

/** Inserts an event type; a taken name fails with PostgreSQL's unique violation (23505). */
export async function insertEventType(db: Queryable, t: EventTypeFields): Promise<EventTypeRow> {
  const { rows } = await db.query<EventTypeRow>(
    `insert into event_types (name, description, archived, deprecated, schemas, group_name, feature_flags)
     values ($1::text, $2::text, $3::boolean, $4::boolean, $5::text, $6::text, $7::text[])
     returning ${COLUMNS}`,
    fieldParams(t),
  );
  return rows[0]!;
}

/** Creates the event type or replaces every field of it; says which it did. */
export async function upsertEventType(
  db: Queryable,
  t: EventTypeFields,
): Promise<{ row: EventTypeRow; created: boolean }> {
  // xmax is 0 on a freshly inserted row version, and set when the conflict updated one
  const { rows } = await db.query<EventTypeRow & { created: boolean }>(
    `insert into event_types (name, description, archived, deprecated, schemas, group_name, feature_flags)
     values ($1::text, $2::text, $3::boolean, $4::boolean, $5::text, $6::text, $7::text[])
     on conflict (name) do update set
       description = excluded.description, archived = excluded.archived,
       deprecated = excluded.deprecated, schemas = excluded.schemas,
       group_name = excluded.group_name, feature_flags = excluded.feature_flags, updated_at = now()
     returning ${COLUMNS}, (xmax = 0) as created`,
    fieldParams(t),
  );
  const { created, ...row } = rows[0]!;
  return { row, created };
}

/** The fields of an event type a patch may set; undefined leaves the column as it is. */
export type EventTypeChanges = Partial<Omit<EventTypeFields, "name">>;

/** Sets the fields given; null when there is no such event type. */
export async function updateEventType(
  db: Queryable,
  name: string,
  changes: EventTypeChanges,
): Promise<EventTypeRow | null> {
  // description, archived and deprecated are never null, so null means "keep"; the
  // nullable columns take their parameter when their flag ($8..$10) says it was given
  const { rows } = await db.query<EventTypeRow>(
    `update event_types set
       description = coalesce($2::text, description),
       archived = coalesce($3::boolean, archived),
       deprecated = coalesce($4::boolean, deprecated),
       schemas = case when $8::boolean then $5::text else schemas end,
       group_name = case when $9::boolean then $6::text else group_name end,
       feature_flags = case when $10::boolean then $7::text[] else feature_flags end,
       updated_at = now()
     where name = $1::text
     returning ${COLUMNS}`,
    [
      name,
      changes.description ?? null,
      changes.archived ?? null,
      changes.deprecated ?? null,
      changes.schemas ?? null,
      changes.group_name ?? null,
      changes.feature_flags ?? null,
      changes.schemas !== undefined,
      changes.group_name !== undefined,
      changes.feature_flags !== undefined,
    ],
  );
  return rows[0] ?? null;
}

/** Archives the event type (messages keep naming it); false when there is none. */
export async function archiveEventType(db: Queryable, name: string): Promise<boolean> {
  const { rowCount } = await db.query(
    "update event_types set archived = true, updated_at = now() where name = $1::text",
    [name],
  );
  return rowCount !== 0;
}

/** Deletes the event type's row; false when there is none. */
export async function deleteEventType(db: Queryable, name: string): Promise<boolean> {
  const { rowCount } = await db.query("delete from event_types where name = $1::text", [name]);
  return rowCount !== 0;
}
