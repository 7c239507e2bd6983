/**
 * Starts one throwaway embedded PostgreSQL for the whole run and migrates a template
 * database; each test file clones its own database from the template (fast, isolated).
 */
import { chmod, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import pg from "pg";
import type { TestProject } from "vitest/node";
import { startEmbeddedPostgres } from "../../src/db/embedded.ts";
import { migrate } from "../../src/db/migrate.ts";
import { makePool } from "../../src/db/pool.ts";

export const TEMPLATE_DB = "hookrelay_template";

declare module "vitest" {
  export interface ProvidedContext {
    pgAdminUrl: string;
    pgTemplate: string;
  }
}

export default async function setup(project: TestProject) {
  const dataDir = await mkdtemp(path.join(tmpdir(), "hookrelay-test-"));
  // a throwaway folder of our own: as root, the postgres user must enter it (docs/embedded.md)
  await chmod(dataDir, 0o755);
  const db = await startEmbeddedPostgres({
    dataDir,
    port: 0,
    database: TEMPLATE_DB,
    // Throwaway cluster: durability off for speed; connections for parallel files and workers.
    postgresFlags: [
      "-c",
      "fsync=off",
      "-c",
      "synchronous_commit=off",
      "-c",
      "full_page_writes=off",
      "-c",
      "max_connections=300",
    ],
  });
  const pool = makePool({ connectionString: db.connectionString, max: 2 });
  await migrate(pool);
  await pool.end();
  const adminUrl = db.connectionString.replace(/\/[^/]+$/, "/postgres");
  project.provide("pgAdminUrl", adminUrl);
  project.provide("pgTemplate", TEMPLATE_DB);
  return async () => {
    await db.stop();
    await rm(dataDir, { recursive: true, force: true });
  };
}

/** Creates a database cloned from the template (used by test files through db.ts). */
export async function cloneTemplate(adminUrl: string, name: string, template: string) {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    await client.query(
      `create database ${client.escapeIdentifier(name)} template ${client.escapeIdentifier(template)}`,
    );
  } finally {
    await client.end();
  }
}
