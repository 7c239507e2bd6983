/**
 * The schema step of a server's start (docs/database.md, "Roles and schema"). Both ways
 * of running work:
 *
 * - one role for everything: the server migrates a schema that is behind, then runs;
 * - the owner migrates, the app role runs: `hookrelay migrate` (or this step, given
 *   HOOKRELAY_MIGRATION_DATABASE_URL) migrates as the owner, and the server's role, with
 *   DML rights only, finds the schema current and only reads it.
 *
 * HOOKRELAY_MIGRATE=skip makes a server never migrate: a schema behind is then refused.
 * After this step the role's rights are checked, so a missing grant is one sentence at
 * start instead of errors while serving.
 */
import type { Logger } from "../logger.ts";
import { loadMigrations, migrate } from "./migrate.ts";
import { makePool, type Pool } from "./pool.ts";
import { notMigrated, PrivilegeError } from "./schema-errors.ts";
import { checkRights, readSchemaState } from "./schema-state.ts";

export interface SchemaStartOptions {
  /** HOOKRELAY_DB_SCHEMA; undefined: the role's current schema */
  schema: string | undefined;
  /** HOOKRELAY_MIGRATE: "auto" migrates a schema that is behind, "skip" refuses it */
  migrate: "auto" | "skip";
  /** HOOKRELAY_MIGRATION_DATABASE_URL: migrate through this role rather than `pool`'s */
  migrationDatabaseUrl: string | undefined;
  /** `pool` goes through a transaction pooler (migrate's `sessionless`); default false */
  pooled?: boolean;
  logger?: Logger;
}

/** Brings the schema up to date where allowed and checks the rights; returns what it applied. */
export async function prepareSchema(pool: Pool, options: SchemaStartOptions): Promise<string[]> {
  const known = await loadMigrations();
  let state = await readSchemaState(pool, options.schema, known);
  let applied: string[] = [];
  if (state.pending.length > 0) {
    // (all of them: a schema not migrated at all, said so rather than listed)
    const pending = state.pending.length === known.length ? [] : state.pending.map((m) => m.name);
    if (options.migrate === "skip")
      throw notMigrated(state.schema, pending, "HOOKRELAY_MIGRATE is skip");
    if (options.migrationDatabaseUrl) {
      const owner = makePool({
        connectionString: options.migrationDatabaseUrl,
        max: 1,
        applicationName: "hookrelay-migrate",
        logger: options.logger,
      });
      try {
        applied = await migrate(owner, { schema: state.schema });
      } finally {
        await owner.end();
      }
    } else {
      try {
        applied = await migrate(pool, {
          schema: state.schema,
          sessionless: options.pooled === true,
        });
      } catch (err) {
        if (!(err instanceof PrivilegeError)) throw err;
        throw notMigrated(state.schema, pending, `role "${state.role}" may not migrate it`);
      }
    }
    state = await readSchemaState(pool, options.schema, known);
    if (state.pending.length > 0)
      throw notMigrated(
        state.schema,
        state.pending.map((m) => m.name),
        "migrating did not reach this process's schema (check HOOKRELAY_DB_SCHEMA)",
      );
  }
  await checkRights(pool, state, known);
  return applied;
}
