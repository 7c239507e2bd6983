/**
 * Applies the numbered `.sql` files in ./migrations in order, each in its own transaction.
 * Safe when several processes start at once: every transaction first takes the same
 * advisory lock, then inserts the migration's id before running it, so a migration is
 * applied exactly once and a second process waits, sees it applied and skips it.
 *
 * A file whose first line is `-- hookrelay:no-transaction` runs outside a transaction
 * instead, statement by statement (for `create index concurrently`, `validate constraint`
 * on a big table, and the like: work that must not hold locks while it scans), under the
 * same lock taken for the session; its id is recorded after its last statement succeeded.
 * Such a file must be safe to run again from its start (a process that dies halfway runs
 * it again): `if not exists`, guarded DO blocks. Its statements end with `;` at the end of
 * a line; a `$$`-quoted body may span lines (docs/history.md, "Migrating").
 *
 * Forward only, and never backwards: a database that has migrations applied which this
 * code does not know (a newer hookrelay migrated it) is refused before anything changes,
 * since this code's queries were not written for that schema.
 */
import { readdir, readFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { ConfigError, DatabaseError, HookRelayError } from "../errors.ts";
import { type Pool, type PoolClient, withTransaction } from "./pool.ts";
import { isPrivilegeError, migrationRefused, PrivilegeError } from "./schema-errors.ts";
import { tablePrefix } from "./schema-name.ts";

const MIGRATIONS_DIR = path.join(path.dirname(fileURLToPath(import.meta.url)), "migrations");
// Any constant works; this one spells "hookrelay" loosely and is ours alone.
const MIGRATION_LOCK = 0x686f6f6b;

export interface Migration {
  id: number;
  name: string;
  sql: string;
  /** false: the file starts with NO_TRANSACTION_HEADER */
  transactional: boolean;
}

/** The first line of a migration that runs outside a transaction (see the module comment). */
export const NO_TRANSACTION_HEADER = "-- hookrelay:no-transaction";

/**
 * The statements of a no-transaction migration: split after each line that ends with `;`
 * outside a `$$`-quoted body; comment-only and blank pieces are left out.
 */
export function splitStatements(sql: string): string[] {
  const statements: string[] = [];
  let current: string[] = [];
  let inBody = false;
  for (const line of sql.split("\n")) {
    current.push(line);
    if ((line.match(/\$\$/g)?.length ?? 0) % 2 === 1) inBody = !inBody;
    if (!inBody && /;\s*$/.test(line)) {
      statements.push(current.join("\n"));
      current = [];
    }
  }
  statements.push(current.join("\n"));
  const code = (s: string) =>
    s
      .split("\n")
      .filter((l) => !/^\s*(--.*)?$/.test(l))
      .join("\n");
  return statements.filter((s) => code(s).trim() !== "");
}

export async function loadMigrations(dir = MIGRATIONS_DIR): Promise<Migration[]> {
  const files = (await readdir(dir)).filter((f) => /^\d+_[\w-]+\.sql$/.test(f)).sort();
  const migrations: Migration[] = [];
  for (const file of files) {
    const sql = await readFile(path.join(dir, file), "utf8");
    migrations.push({
      id: Number.parseInt(file, 10),
      name: file,
      sql,
      transactional: sql.split("\n", 1)[0]?.trim() !== NO_TRANSACTION_HEADER,
    });
  }
  // Numbers rise strictly; a gap is allowed: numbers are handed out to branches in
  // advance, and one may be merged before a lower one (each is recorded by its number).
  migrations.forEach((m, i) => {
    const before = migrations[i - 1];
    if (m.id < 1 || (before !== undefined && m.id <= before.id))
      throw new DatabaseError(
        `migration ${m.name}: its number must be above ${before?.name ?? "0"}'s (no two alike)`,
      );
  });
  return migrations;
}

/** The database's schema is newer than this code: it has migrations this code lacks. */
export class SchemaTooNewError extends HookRelayError {
  /** the applied migrations this code does not know, by name */
  readonly unknown: string[];
  constructor(unknown: string[], latestKnown: string | undefined) {
    super(
      "schema_too_new",
      `the database was migrated by a newer hookrelay: migration${unknown.length === 1 ? "" : "s"} ` +
        `${unknown.join(", ")} ${unknown.length === 1 ? "is" : "are"} applied, but this version ` +
        `knows migrations up to ${latestKnown ?? "(none)"} only. Upgrade hookrelay to the ` +
        "version that applied them, or a newer one; nothing was changed.",
    );
    this.unknown = unknown;
  }
}

/**
 * Throws SchemaTooNewError if the database has applied migrations `known` does not hold.
 * By id only: a file renamed since it was applied is still the same migration.
 */
export function refuseNewerSchema(
  applied: readonly { id: number; name: string }[],
  known: readonly Migration[],
): void {
  const ids = new Set(known.map((m) => m.id));
  const unknown = applied.filter((a) => !ids.has(a.id));
  if (unknown.length > 0)
    throw new SchemaTooNewError(
      unknown.map((a) => a.name),
      known.at(-1)?.name,
    );
}

export interface MigrateOptions {
  /**
   * The schema to migrate (created when missing, if the role may); undefined: the
   * connection's current schema, as before HOOKRELAY_DB_SCHEMA existed (usually public).
   */
  schema?: string;
  /** where the migration files are; default this module's ./migrations (tests set it) */
  migrationsDir?: string;
  /**
   * true: the pool may hand each statement to another server session (a transaction
   * pooler), so a no-transaction migration runs each statement in a transaction of its
   * own instead (under the transaction lock), and one that PostgreSQL refuses inside a
   * transaction (`create index concurrently`) is refused with a sentence naming the fix.
   * Default false.
   */
  sessionless?: boolean;
}

async function appliedIn(client: PoolClient, schema: string) {
  const { rows } = await client.query<{ id: number; name: string }>(
    `select id, name from ${tablePrefix(schema)}hookrelay_migrations order by id`,
  );
  return rows;
}

/**
 * The schema of this migration run: the configured one, created if missing, or the
 * current one. Every transaction of the run then resolves names in it alone (a local
 * setting: it ends with the transaction, so it holds behind a transaction pooler too).
 */
async function enterSchema(client: PoolClient, configured: string | undefined, local = true) {
  const { rows } = await client.query(
    `select current_user as role, current_schema() as current,
            exists (select from pg_namespace where nspname = $1::text) as exists`,
    [configured ?? ""],
  );
  const role: string = rows[0].role;
  const schema: string | null = configured ?? rows[0].current;
  if (schema === null)
    throw new ConfigError(
      `role "${role}" has no schema on its search_path to migrate into: set HOOKRELAY_DB_SCHEMA (docs/database.md, "Roles and schema").`,
    );
  // CREATE SCHEMA checks the database's CREATE right even when the schema exists: ask first.
  if (configured !== undefined && !rows[0].exists) {
    try {
      await client.query(`create schema "${schema}"`);
    } catch (err) {
      if (!isPrivilegeError(err)) throw err;
      throw new PrivilegeError(
        `role "${role}" may not create schema "${schema}" (${err.message}): have an administrator run \`create schema ${schema} authorization ${role}\`, then migrate again (docs/database.md, "Roles and schema").`,
      );
    }
  }
  await client.query("select set_config('search_path', $1::text, $2::boolean)", [
    `"${schema}"`,
    local,
  ]);
  return { role, schema };
}

/**
 * Runs a no-transaction migration statement by statement on one session that holds the
 * migration lock (a session lock: no transaction stays open), then records it. False when
 * another process applied it meanwhile.
 */
async function applyOutsideTransaction(
  pool: Pool,
  migration: Migration,
  schema: string,
  known: readonly Migration[],
): Promise<boolean> {
  const client = await pool.connect();
  let broken: Error | undefined;
  try {
    await client.query("select pg_advisory_lock($1::bigint)", [MIGRATION_LOCK]);
    try {
      await enterSchema(client, schema, false);
      const applied = await appliedIn(client, schema);
      refuseNewerSchema(applied, known);
      if (applied.some((a) => a.id === migration.id)) return false;
      for (const statement of splitStatements(migration.sql)) {
        try {
          await client.query(statement);
        } catch (err) {
          if (isPrivilegeError(err)) throw err;
          throw new DatabaseError(`migration ${migration.name} failed`, { cause: err });
        }
      }
      await client.query(
        "insert into hookrelay_migrations (id, name) values ($1::integer, $2::text)",
        [migration.id, migration.name],
      );
      return true;
    } finally {
      // (a connection lost here releases the lock with the session: it is not reused)
      await client
        .query("select pg_advisory_unlock($1::bigint); reset search_path")
        .catch((err: Error) => {
          broken ??= err;
        });
    }
  } catch (err) {
    broken = err as Error;
    throw err;
  } finally {
    // a session whose statement failed may be left in any state: not back into the pool
    client.release(broken);
  }
}

/**
 * A no-transaction migration through a pool without sessions of its own: each statement
 * in its own transaction, under the transaction-scoped lock and schema; then its record.
 */
async function applyStepByStep(
  pool: Pool,
  migration: Migration,
  schema: string,
  known: readonly Migration[],
): Promise<boolean> {
  const step = (fn: (client: PoolClient) => Promise<boolean>) =>
    withTransaction(pool, async (client) => {
      await client.query("select pg_advisory_xact_lock($1::bigint)", [MIGRATION_LOCK]);
      await enterSchema(client, schema);
      const applied = await appliedIn(client, schema);
      refuseNewerSchema(applied, known);
      if (applied.some((a) => a.id === migration.id)) return false;
      return fn(client);
    });
  for (const statement of splitStatements(migration.sql)) {
    const went = await step(async (client) => {
      try {
        await client.query(statement);
      } catch (err) {
        if (isPrivilegeError(err)) throw err;
        if ((err as { code?: string }).code === "25001")
          throw new ConfigError(
            `migration ${migration.name} has a step PostgreSQL runs only outside a transaction, which a transaction pooler cannot give: migrate through a direct connection (HOOKRELAY_MIGRATION_DATABASE_URL, or \`hookrelay migrate --database-url\`), docs/database.md`,
            { cause: err },
          );
        throw new DatabaseError(`migration ${migration.name} failed`, { cause: err });
      }
      return true;
    });
    if (!went) return false;
  }
  return step(async (client) => {
    await client.query(
      "insert into hookrelay_migrations (id, name) values ($1::integer, $2::text)",
      [migration.id, migration.name],
    );
    return true;
  });
}

/**
 * Brings the schema up to date; returns the names of the migrations this call applied.
 * Refuses (SchemaTooNewError, nothing changed) a database a newer hookrelay migrated, and
 * answers a role that may not make a change with one sentence (PrivilegeError). A schema
 * already current is only read: a role with no right to change it may call this.
 */
export async function migrate(pool: Pool, options: MigrateOptions = {}): Promise<string[]> {
  const migrations = await loadMigrations(options.migrationsDir);
  let where = { role: "?", schema: options.schema ?? "?" };
  try {
    const pending = await withTransaction(pool, async (client) => {
      await client.query("select pg_advisory_xact_lock($1::bigint)", [MIGRATION_LOCK]);
      where = await enterSchema(client, options.schema);
      const exists = await client.query(
        "select to_regclass('hookrelay_migrations') is not null as e",
      );
      if (!exists.rows[0].e)
        await client.query(`
          create table hookrelay_migrations (
            id integer primary key,
            name text not null,
            applied_at timestamptz not null default now()
          )`);
      // (unknown rows mean the table was there before: a refusal leaves everything as it was)
      const applied = await appliedIn(client, where.schema);
      refuseNewerSchema(applied, migrations);
      const done = new Set(applied.map((a) => a.id));
      return migrations.filter((m) => !done.has(m.id));
    });
    const applied: string[] = [];
    for (const migration of pending) {
      if (!migration.transactional) {
        const apply = options.sessionless ? applyStepByStep : applyOutsideTransaction;
        if (await apply(pool, migration, where.schema, migrations)) applied.push(migration.name);
        continue;
      }
      const done = await withTransaction(pool, async (client) => {
        await client.query("select pg_advisory_xact_lock($1::bigint)", [MIGRATION_LOCK]);
        await enterSchema(client, where.schema);
        // again under this lock: a newer hookrelay may have migrated since the check above
        refuseNewerSchema(await appliedIn(client, where.schema), migrations);
        const inserted = await client.query(
          `insert into hookrelay_migrations (id, name) values ($1::integer, $2::text)
           on conflict (id) do nothing`,
          [migration.id, migration.name],
        );
        if (inserted.rowCount === 0) return false;
        try {
          await client.query(migration.sql);
        } catch (err) {
          if (isPrivilegeError(err)) throw err;
          throw new DatabaseError(`migration ${migration.name} failed`, { cause: err });
        }
        return true;
      });
      if (done) applied.push(migration.name);
    }
    return applied;
  } catch (err) {
    if (isPrivilegeError(err) && !(err instanceof PrivilegeError))
      throw migrationRefused(where.role, where.schema, err);
    throw err;
  }
}
