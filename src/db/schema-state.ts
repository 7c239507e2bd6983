/**
 * What a starting server finds in the database, before it serves (docs/database.md,
 * "Roles and schema"): the schema its role's search_path leads to, the migrations still
 * to apply there, and whether the role holds every right hookrelay's statements need.
 * It reads only, so a role with DML rights alone can start on a current schema; every
 * problem is one sentence that says what to run.
 */
import { ConfigError } from "../errors.ts";
import { type Migration, refuseNewerSchema } from "./migrate.ts";
import type { Queryable } from "./pool.ts";
import { isPrivilegeError, PrivilegeError, rightsMissing } from "./schema-errors.ts";
import { tablePrefix } from "./schema-name.ts";

const DOCS = 'docs/database.md, "Roles and schema"';

export interface SchemaState {
  /** the role the connection runs as */
  role: string;
  /** the schema hookrelay's tables are (or will be) in */
  schema: string;
  /** known migrations not applied there, in order (all of them: a schema not migrated) */
  pending: Migration[];
}

/**
 * Reads the schema's state. `configured` (HOOKRELAY_DB_SCHEMA) must be where the role's
 * search_path leads; unset, the current schema is taken. Throws SchemaTooNewError for a
 * schema a newer hookrelay migrated.
 */
export async function readSchemaState(
  db: Queryable,
  configured: string | undefined,
  known: readonly Migration[],
): Promise<SchemaState> {
  const { rows } = await db.query(
    `select current_user as role, current_schema() as current,
            (select has_schema_privilege(n.oid, 'USAGE') from pg_namespace n
             where n.nspname = $1::text) as usage`,
    [configured ?? ""],
  );
  const role: string = rows[0].role;
  const current: string | null = rows[0].current;
  if (configured === undefined) {
    if (current === null)
      throw new ConfigError(
        `role "${role}" has no usable schema on its search_path: set HOOKRELAY_DB_SCHEMA, or grant the role usage on its schema (${DOCS}).`,
      );
  } else if (rows[0].usage === null) {
    return { role, schema: configured, pending: [...known] };
  } else if (rows[0].usage === false) {
    throw new PrivilegeError(
      `role "${role}" lacks usage on schema "${configured}": run \`grant usage on schema ${configured} to ${role}\` (${DOCS}).`,
    );
  } else if (current !== configured) {
    // A per-session SET would be lost behind a transaction pooler: the role's default is
    // the one setting that reaches every connection.
    throw new ConfigError(
      `HOOKRELAY_DB_SCHEMA is "${configured}" but role "${role}" resolves names in ${current === null ? "no schema" : `"${current}"`}: run \`alter role ${role} set search_path = ${configured}\` and start again (${DOCS}).`,
    );
  }
  const schema = configured ?? (current as string);
  const table = `${tablePrefix(schema)}hookrelay_migrations`;
  const found = await db.query("select to_regclass($1::text) is not null as e", [table]);
  if (!found.rows[0].e) return { role, schema, pending: [...known] };
  let applied: { id: number; name: string }[];
  try {
    applied = (await db.query(`select id, name from ${table} order by id`)).rows;
  } catch (err) {
    if (!isPrivilegeError(err)) throw err;
    throw rightsMissing(role, [`select on table ${schema}.hookrelay_migrations`]);
  }
  refuseNewerSchema(applied, known);
  const done = new Set(applied.map((a) => a.id));
  return { role, schema, pending: known.filter((m) => !done.has(m.id)) };
}

/** The names a kind of object is created under in the migrations (e.g. every table). */
function createdNames(known: readonly Migration[], kind: RegExp): string[] {
  const pattern = new RegExp(
    `\\bcreate\\s+(?:or\\s+replace\\s+)?(?:unlogged\\s+)?${kind.source}\\s+(?:if\\s+not\\s+exists\\s+)?(\\w+)`,
    "gi",
  );
  const names = new Set<string>();
  for (const m of known) for (const match of m.sql.matchAll(pattern)) names.add(match[1]!);
  return [...names];
}

/**
 * The rights a server role needs and lacks, as "insert on table s.messages": select,
 * insert, update and delete on hookrelay's tables (taken from the migrations, so a shared
 * schema's other tables are not asked for), usage on its sequences, execute on its
 * functions. Objects a later migration dropped are skipped.
 */
export async function missingRights(
  db: Queryable,
  schema: string,
  known: readonly Migration[],
): Promise<string[]> {
  const { rows } = await db.query(
    `with t as (select format('%I.%I', $1::text, name) as q, name
                from unnest($2::text[]) name),
          s as (select format('%I.%I', $1::text, name) as q, name
                from unnest($3::text[]) name)
     select 'on table' as kind, t.name, p.priv
     from t cross join unnest(array['select', 'insert', 'update', 'delete']) p(priv)
     where to_regclass(t.q) is not null and not has_table_privilege(t.q, p.priv)
     union all
     select 'on sequence', s.name, 'usage'
     from s where to_regclass(s.q) is not null and not has_sequence_privilege(s.q, 'usage')
     union all
     select 'on function', p.oid::regprocedure::text, 'execute'
     from pg_proc p join pg_namespace n on n.oid = p.pronamespace
     where n.nspname = $1::text and p.proname = any ($4::text[])
       and not has_function_privilege(p.oid, 'execute')`,
    [
      schema,
      createdNames(known, /table/),
      createdNames(known, /sequence/),
      createdNames(known, /function/),
    ],
  );
  return rows.map((r) =>
    r.kind === "on function"
      ? `execute on function ${r.name}`
      : `${r.priv} ${r.kind} ${schema}.${r.name}`,
  );
}

/** Throws one sentence naming the role and the first missing right, if any is missing. */
export async function checkRights(
  db: Queryable,
  state: Pick<SchemaState, "role" | "schema">,
  known: readonly Migration[],
): Promise<void> {
  const missing = await missingRights(db, state.schema, known);
  if (missing.length > 0) throw rightsMissing(state.role, missing);
}
