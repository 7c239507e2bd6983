/**
 * Starts one throwaway embedded PostgreSQL for the whole run and migrates a template
 * database; each test file clones its own database from the template (fast, isolated).
 */
import { chmod, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import type { TestProject } from "vitest/node";
import { type EmbeddedDatabase, startEmbeddedPostgres } from "../../src/db/embedded.ts";
import { migrate } from "../../src/db/migrate.ts";
import { makePool } from "../../src/db/pool.ts";
import { withClient } from "../../src/db/short-client.ts";

export const TEMPLATE_DB = "hookrelay_template";

declare module "vitest" {
  export interface ProvidedContext {
    pgAdminUrl: string;
    pgTemplate: string;
  }
}

/** A running throwaway cluster with the migrated template, and how to remove it. */
export interface TemplateCluster {
  adminUrl: string;
  stop(): Promise<void>;
}

/**
 * Starts the throwaway cluster in a new temporary folder and runs `prepare` (the
 * migrations) on its template database. If anything fails after the cluster started, the
 * cluster is stopped and its folder removed before the error is rethrown: a broken
 * migration must not leave a postmaster behind with nobody to stop it.
 */
export async function startTemplateCluster(
  prepare: (connectionString: string, clusterDir: string) => Promise<void> = migrateTemplate,
): Promise<TemplateCluster> {
  const dataDir = await mkdtemp(path.join(tmpdir(), "hookrelay-test-"));
  const removeDir = () => rm(dataDir, { recursive: true, force: true });
  let db: EmbeddedDatabase;
  try {
    // a throwaway folder of our own: as root, the postgres user must enter it (docs/embedded.md)
    await chmod(dataDir, 0o755);
    db = await startEmbeddedPostgres({
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
  } catch (err) {
    await removeDir();
    throw err;
  }
  const stop = async () => {
    try {
      await db.stop();
    } finally {
      await removeDir();
    }
  };
  try {
    await prepare(db.connectionString, db.clusterDir);
  } catch (err) {
    await stop();
    throw err;
  }
  return { adminUrl: db.connectionString.replace(/\/[^/]+$/, "/postgres"), stop };
}

async function migrateTemplate(connectionString: string): Promise<void> {
  const pool = makePool({ connectionString, max: 2 });
  try {
    await migrate(pool);
  } finally {
    await pool.end();
  }
}

export default async function setup(project: TestProject) {
  const cluster = await startTemplateCluster();
  project.provide("pgAdminUrl", cluster.adminUrl);
  project.provide("pgTemplate", TEMPLATE_DB);
  return cluster.stop;
}

/** Creates a database cloned from the template (used by test files through db.ts). */
export async function cloneTemplate(adminUrl: string, name: string, template: string) {
  await withClient({ connectionString: adminUrl }, (client) =>
    client.query(
      `create database ${client.escapeIdentifier(name)} template ${client.escapeIdentifier(template)}`,
    ),
  );
}
