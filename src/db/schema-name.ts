/**
 * The PostgreSQL schema hookrelay's tables live in (HOOKRELAY_DB_SCHEMA, docs/database.md,
 * "Roles and schema"). hookrelay's own connections find their tables through the role's
 * search_path, which start-up checks (schema-state.ts): a per-session `SET` would be lost
 * behind a transaction-mode pooler. The library's statements, which run on the caller's
 * connection inside the caller's transaction, name the schema instead (`qualified`), so
 * the caller's search_path is never touched.
 */
import { ConfigError } from "../errors.ts";

/** Lowercase so that it needs no quoting anywhere; at most PostgreSQL's 63 bytes. */
const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;
export const SCHEMA_NAME_RULE = "a lowercase SQL name: a-z, 0-9 and _, not starting with a digit";

/** The schema name of a setting, or a ConfigError naming the setting. */
export function schemaNameOf(raw: string | undefined, setting: string): string | undefined {
  if (raw === undefined) return undefined;
  if (!SCHEMA_NAME.test(raw) || raw.startsWith("pg_"))
    throw new ConfigError(`${setting} must be ${SCHEMA_NAME_RULE} (and not pg_...), got "${raw}"`);
  return raw;
}

/** `"schema".` to put before a table name, or "" for the connection's search_path. */
export function tablePrefix(schema: string | undefined): string {
  return schema === undefined ? "" : `"${schema}".`;
}

/**
 * `url` with the startup parameter that makes `schema` the session's search_path: for a
 * direct connection only (pgbouncer refuses an `options` parameter it was not told to
 * ignore, and ignoring it loses the setting).
 */
export function withSearchPath(url: string, schema: string): string {
  const parsed = new URL(url);
  parsed.searchParams.set("options", `-c search_path=${schema}`);
  return parsed.href;
}
