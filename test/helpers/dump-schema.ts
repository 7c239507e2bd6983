import { chmod, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { startEmbeddedPostgres } from "../../src/db/embedded.ts";
import { migrate } from "../../src/db/migrate.ts";
import { makePool } from "../../src/db/pool.ts";
import { schemaSnapshot } from "../../src/db/schema-snapshot.ts";

export const SNAPSHOT_FILE = path.join(import.meta.dirname, "..", "schema.sql");

export async function dumpSchema(): Promise<void> {
  const dataDir = await mkdtemp(path.join(tmpdir(), "hookrelay-schema-"));
  // a throwaway folder of our own: as root, the postgres user must enter it (docs/embedded.md)
  await chmod(dataDir, 0o755);
  const db = await startEmbeddedPostgres({ dataDir, port: 0, postgresFlags: ["-c", "fsync=off"] });
  try {
    const pool = makePool({ connectionString: db.connectionString, max: 2 });
    await migrate(pool);
    await writeFile(SNAPSHOT_FILE, await schemaSnapshot(pool));
    await pool.end();
  } finally {
    await db.stop();
    await rm(dataDir, { recursive: true, force: true });
  }
  process.stdout.write(`wrote ${SNAPSHOT_FILE}\n`);
}
