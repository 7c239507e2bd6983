/**
 * The database a configuration names: DATABASE_URL, or the embedded cluster in its data
 * folder (started here, loaded only then). What `hookrelay migrate` needs of the server,
 * without loading the rest of it (runtime.ts).
 */
import type { Config } from "../config.ts";
import type { Logger } from "../logger.ts";
import type { EmbeddedDatabase } from "./embedded.ts";
import { makePool } from "./pool.ts";
import { withSearchPath } from "./schema-name.ts";

/** Opens the database given by the config: DATABASE_URL, or the embedded cluster. */
export async function openDatabase(config: Config, logger: Logger) {
  let embedded: EmbeddedDatabase | null = null;
  let connectionString = config.databaseUrl;
  if (!connectionString) {
    const { startEmbeddedPostgres } = await import("./embedded.ts");
    embedded = await startEmbeddedPostgres({
      dataDir: config.dataDir,
      port: config.embeddedPgPort,
      logger,
    });
    connectionString = embedded.connectionString;
    // a direct connection of our own: the schema can be the session's default
    if (config.dbSchema) connectionString = withSearchPath(connectionString, config.dbSchema);
  }
  const pool = makePool({ connectionString, max: config.dbPoolSize, logger });
  return { pool, connectionString, embedded };
}
