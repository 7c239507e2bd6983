/**
 * migrate, db-url: the two commands that work on the database itself rather than through
 * the API. `migrate` loads the database layer only when it runs.
 */
import type { Command } from "commander";
import { loadClientConfig, loadConfig } from "../../config.ts";
import {
  clusterDirFor,
  embeddedUrl,
  maskPassword,
  readEmbeddedState,
  runningPort,
} from "../../db/embedded-state.ts";
import { ConfigError } from "../../errors.ts";
import { cliIo } from "../io.ts";

/** The connection string of the database hookrelay uses here; throws when there is none. */
export async function databaseUrl(): Promise<string> {
  const config = loadClientConfig(cliIo().env);
  if (config.databaseUrl) return config.databaseUrl;
  const state = await readEmbeddedState(config.dataDir);
  if (!state) {
    throw new ConfigError(
      `no embedded database in ${config.dataDir} yet: start hookrelay once with \`npm start\``,
    );
  }
  const port = await runningPort(clusterDirFor(config.dataDir, state));
  if (port === undefined) {
    throw new ConfigError(
      `the embedded database in ${config.dataDir} is not running (its port is chosen when it starts): start hookrelay with \`npm start\``,
    );
  }
  return embeddedUrl(state, port);
}

export function registerDatabaseCommands(program: Command): void {
  program
    .command("migrate")
    .description(
      "apply database migrations and exit (as the role that owns the schema: docs/database.md)",
    )
    .option(
      "--database-url <url>",
      "the role to migrate as (default: HOOKRELAY_MIGRATION_DATABASE_URL, else DATABASE_URL)",
    )
    .action(async (o: { databaseUrl?: string }) => {
      // the database layer only, not the server (runtime.ts): migrate starts as fast as it can
      const [{ makeProcessLogging }, { openDatabase }, { migrate }] = await Promise.all([
        import("../../logger.ts"),
        import("../../db/open-database.ts"),
        import("../../db/migrate.ts"),
      ]);
      const fromEnv = loadConfig(cliIo().env);
      const url = o.databaseUrl ?? fromEnv.migrationDatabaseUrl;
      const config = url ? loadConfig(cliIo().env, { databaseUrl: url }) : fromEnv;
      const { logger } = makeProcessLogging(config);
      const { pool, embedded } = await openDatabase(config, logger);
      try {
        const applied = await migrate(pool, { schema: config.dbSchema });
        cliIo().stdout.write(
          applied.length ? `applied: ${applied.join(", ")}\n` : "schema up to date\n",
        );
      } finally {
        await pool.end();
        await embedded?.stop();
      }
    });

  program
    .command("db-url")
    .description(
      "print the PostgreSQL connection string (of the running embedded database, or DATABASE_URL), e.g. for the outbox library",
    )
    .option("--masked", "with the password replaced by ****")
    .action(async (o: { masked?: boolean }) => {
      const url = await databaseUrl();
      cliIo().stdout.write(`${o.masked ? maskPassword(url) : url}\n`);
    });
}
