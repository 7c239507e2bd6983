/**
 * Applies the numbered `.sql` files in ./migrations in order, each in its own transaction.
 * Safe when several processes start at once: every transaction first takes the same
 * advisory lock, then inserts the migration's id before running it, so a migration is
 * applied exactly once and a second process waits, sees it applied and skips it.
 *
 * Forward only, and never backwards: a database that has migrations applied which this
 * code does not know (a newer hookrelay migrated it) is refused before anything changes,
 * since this code's queries were not written for that schema.
 */
import { readdir, readFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { DatabaseError, HookRelayError } from "../errors.ts";
import { type Pool, type PoolClient, withTransaction } from "./pool.ts";

const MIGRATIONS_DIR = path.join(path.dirname(fileURLToPath(import.meta.url)), "migrations");
// Any constant works; this one spells "hookrelay" loosely and is ours alone.
const MIGRATION_LOCK = 0x686f6f6b;

export interface Migration {
  id: number;
  name: string;
  sql: string;
}

export async function loadMigrations(dir = MIGRATIONS_DIR): Promise<Migration[]> {
  const files = (await readdir(dir)).filter((f) => /^\d+_[\w-]+\.sql$/.test(f)).sort();
  const migrations: Migration[] = [];
  for (const file of files) {
    migrations.push({
      id: Number.parseInt(file, 10),
      name: file,
      sql: await readFile(path.join(dir, file), "utf8"),
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
async function refuseNewerSchema(client: PoolClient, known: readonly Migration[]): Promise<void> {
  const { rows } = await client.query(
    "select name from hookrelay_migrations where id <> all ($1::integer[]) order by id",
    [known.map((m) => m.id)],
  );
  if (rows.length > 0)
    throw new SchemaTooNewError(
      rows.map((r) => r.name as string),
      known.at(-1)?.name,
    );
}

/**
 * Brings the schema up to date; returns the names of the migrations this call applied.
 * Refuses (SchemaTooNewError, nothing changed) a database a newer hookrelay migrated.
 */
export async function migrate(pool: Pool): Promise<string[]> {
  const migrations = await loadMigrations();
  await withTransaction(pool, async (client) => {
    await client.query("select pg_advisory_xact_lock($1::bigint)", [MIGRATION_LOCK]);
    await client.query(`
      create table if not exists hookrelay_migrations (
        id integer primary key,
        name text not null,
        applied_at timestamptz not null default now()
      )`);
    // (unknown rows mean the table was there before: a refusal leaves everything as it was)
    await refuseNewerSchema(client, migrations);
  });
  const applied: string[] = [];
  for (const migration of migrations) {
    const done = await withTransaction(pool, async (client) => {
      await client.query("select pg_advisory_xact_lock($1::bigint)", [MIGRATION_LOCK]);
      // again under this lock: a newer hookrelay may have migrated since the check above
      await refuseNewerSchema(client, migrations);
      const inserted = await client.query(
        `insert into hookrelay_migrations (id, name) values ($1::integer, $2::text)
         on conflict (id) do nothing`,
        [migration.id, migration.name],
      );
      if (inserted.rowCount === 0) return false;
      try {
        await client.query(migration.sql);
      } catch (err) {
        throw new DatabaseError(`migration ${migration.name} failed`, { cause: err });
      }
      return true;
    });
    if (done) applied.push(migration.name);
  }
  return applied;
}
