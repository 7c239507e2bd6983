/**
 * A PostgreSQL of the fault run's own (never the test suite's shared one): an embedded
 * cluster in a temporary folder that can be stopped (fast shutdown: every session ends with
 * 57P01, as in a restart or failover) and started again on the same port, so the
 * processes' DATABASE_URL stays valid across the restart.
 */
import { chmod, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { type EmbeddedDatabase, startEmbeddedPostgres } from "../../src/db/embedded.ts";
import { migrate } from "../../src/db/migrate.ts";
import { makePool } from "../../src/db/pool.ts";

export interface RestartableCluster {
  /** URL of the migrated database */
  url: string;
  readonly running: boolean;
  /** fast shutdown; resolves when the server is gone */
  stop(): Promise<void>;
  /** starts it again on the same port and data */
  start(): Promise<void>;
  /** stops it for good and removes its files */
  destroy(): Promise<void>;
}

const DATABASE = "hookrelay_faults";

export async function startRestartableCluster(flags: string[] = []): Promise<RestartableCluster> {
  const dataDir = await mkdtemp(path.join(tmpdir(), "hookrelay-faults-"));
  // a throwaway folder of our own: as root, the postgres user must enter it (docs/embedded.md)
  await chmod(dataDir, 0o755);
  const postgresFlags = ["-c", "max_connections=200", ...flags];
  let db: EmbeddedDatabase | null = await startEmbeddedPostgres({
    dataDir,
    port: 0,
    database: DATABASE,
    postgresFlags,
  });
  const url = db.connectionString;
  const port = Number(new URL(url).port);
  const pool = makePool({ connectionString: url, max: 2 });
  try {
    await migrate(pool);
  } finally {
    await pool.end();
  }
  return {
    url,
    get running() {
      return db !== null;
    },
    async stop() {
      const d = db;
      db = null;
      await d?.stop();
    },
    async start() {
      if (db) return;
      db = await startEmbeddedPostgres({ dataDir, port, database: DATABASE, postgresFlags });
    },
    async destroy() {
      await db?.stop().catch(() => undefined);
      db = null;
      await rm(dataDir, { recursive: true, force: true, maxRetries: 10, retryDelay: 200 });
    },
  };
}
