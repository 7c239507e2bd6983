/**
 * Roles for least-privilege tests (docs/database.md, "Roles and schema"): roles are per
 * cluster, so every name carries a random suffix and `dropRoles` removes them after. The
 * grant scripts are read from docs/database.md itself, so the documented SQL is what runs.
 */
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import type pg from "pg";
import { inject } from "vitest";
import { withClient } from "../../src/db/short-client.ts";

export const ROLE_PASSWORD = `pw_${randomBytes(8).toString("hex")}`;

/** A name unique to this test run, e.g. `hr_app_1a2b3c`. */
export const uniqueRole = (base: string) => `${base}_${randomBytes(4).toString("hex")}`;

/** `url` (a database URL) signed in as `role` with ROLE_PASSWORD. */
export function urlAs(url: string, role: string): string {
  const u = new URL(url);
  u.username = role;
  u.password = ROLE_PASSWORD;
  return u.href;
}

/** Runs `sql` on one connection to `url`, then closes it. */
export async function runSql(url: string, sql: string): Promise<pg.QueryResult[]> {
  return withClient({ connectionString: url }, async (client) => {
    const result = await client.query(sql);
    return Array.isArray(result) ? result : [result];
  });
}

export interface RoleNames {
  owner: string;
  app: string;
  schema: string;
}

/**
 * The two ```sql blocks of docs/database.md's "Roles and schema": the administrator's and
 * the owner's, with the example names and passwords replaced by `names`.
 */
export function documentedRoleScripts(names: RoleNames): { admin: string; owner: string } {
  const doc = readFileSync(new URL("../../docs/database.md", import.meta.url), "utf8");
  const section = doc.slice(doc.indexOf("## Roles and schema"));
  const blocks = [...section.matchAll(/^```sql\n([\s\S]*?)^```$/gm)].map((m) => m[1]!);
  const rename = (sql: string) =>
    sql
      .replace(/\bhookrelay_owner\b/g, names.owner)
      .replace(/\bhookrelay_app\b/g, names.app)
      .replace(/\bhookrelay\b/g, names.schema)
      .replace(/'(owner|app)-password'/g, `'${ROLE_PASSWORD}'`);
  if (blocks.length < 2) throw new Error("docs/database.md: the two role scripts are missing");
  return { admin: rename(blocks[0]!), owner: rename(blocks[1]!) };
}

/** Drops the roles (their databases must be dropped first). */
export async function dropRoles(roles: readonly string[]): Promise<void> {
  if (roles.length === 0) return;
  await runSql(inject("pgAdminUrl"), roles.map((r) => `drop role if exists ${r};`).join("\n"));
}
