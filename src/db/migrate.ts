/**
 * Applies the numbered `.sql` files in ./migrations in order, each in its own transaction.
 * Safe when several processes start at once: every transaction first takes the same
 * advisory lock, then inserts the migration's id before running it, so a migration is
 * applied exactly once and a second process waits, sees it applied and skips it.
 */
import { readdir, readFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { DatabaseError } from "../errors.ts";
import { type Pool, withTransaction } from "./pool.ts";

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
  migrations.forEach((m, i) => {
    if (m.id !== i + 1) throw new DatabaseError(`migration ${m.name}: expected number ${i + 1}`);
  });
  return migrations;
}

/** Brings the schema up to date; returns the names of the migrations this call applied. */
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
  });
  const applied: string[] = [];
  for (const migration of migrations) {
    const done = await withTransaction(pool, async (client) => {
      await client.query("select pg_advisory_xact_lock($1::bigint)", [MIGRATION_LOCK]);
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
