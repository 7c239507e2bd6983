/**
 * The one-sentence errors of a database that is not ready for this process
 * (docs/database.md, "Roles and schema"): a schema not migrated, and a role without a
 * right. Each message names what to run; no cause is attached, so the CLI prints the one
 * sentence and nothing else.
 */
import { HookRelayError } from "../errors.ts";

const DOCS = 'docs/database.md, "Roles and schema"';

/** The schema is missing or behind, and this process does not migrate it. */
export class SchemaNotMigratedError extends HookRelayError {
  constructor(message: string) {
    super("schema_not_migrated", message);
  }
}

/** The role lacks a right hookrelay needs (SQLSTATE 42501 or a failed privilege check). */
export class PrivilegeError extends HookRelayError {
  constructor(message: string) {
    super("insufficient_privilege", message);
  }
}

/** PostgreSQL's insufficient_privilege. */
export const isPrivilegeError = (err: unknown): err is Error & { code: string } =>
  (err as { code?: unknown } | null)?.code === "42501";

/** The sentence for a migration the migrating role may not run. */
export function migrationRefused(role: string, schema: string, err: Error): PrivilegeError {
  // PostgreSQL 15 took CREATE on public away from PUBLIC: only the database owner has it.
  const publicHint =
    schema === "public"
      ? " (since PostgreSQL 15 only the database owner may create in schema public: set HOOKRELAY_DB_SCHEMA to a schema the role owns)"
      : "";
  return new PrivilegeError(
    `role "${role}" may not change schema "${schema}" (${err.message})${publicHint}: run ` +
      "`hookrelay migrate` as the role that owns the schema, with HOOKRELAY_MIGRATION_DATABASE_URL " +
      `or --database-url (${DOCS}).`,
  );
}

/** The sentence for a server that finds the schema missing or behind. */
export function notMigrated(
  schema: string,
  pending: readonly string[],
  why: string,
): SchemaNotMigratedError {
  const what =
    pending.length === 0
      ? `schema "${schema}" is not migrated`
      : `schema "${schema}" lacks migration${pending.length === 1 ? "" : "s"} ${pending.join(", ")}`;
  return new SchemaNotMigratedError(
    `${what} and ${why}: run \`hookrelay migrate\` with HOOKRELAY_MIGRATION_DATABASE_URL (or ` +
      `--database-url) set to a role that owns the schema, then start again (${DOCS}).`,
  );
}

/** The sentence for missing rights found at start. */
export function rightsMissing(role: string, missing: readonly string[]): PrivilegeError {
  const more = missing.length > 1 ? ` and ${missing.length - 1} more right(s)` : "";
  return new PrivilegeError(
    `role "${role}" lacks ${missing[0]}${more} that hookrelay needs: grant them as ${DOCS} shows.`,
  );
}
