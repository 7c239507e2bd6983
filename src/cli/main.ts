#!/usr/bin/env node
/**
 * The `hookrelay` command. `start` runs API + worker in one process (embedded PostgreSQL
 * unless DATABASE_URL is set); `api`, `worker` and `migrate` run one role each.
 */
import { readFileSync } from "node:fs";
import { Command, InvalidArgumentError } from "commander";
import { type Config, loadConfig } from "../config.ts";
import { migrate } from "../db/migrate.ts";
import { ApiError, HookRelayError } from "../errors.ts";
import { makeLogger } from "../logger.ts";
import { openDatabase, type Roles, startRuntime } from "../runtime.ts";
import { makeRedactor } from "../security/redact.ts";
import { registerOperatorCommands } from "./commands.ts";
import { ExitCode } from "./output.ts";

const intArg = (value: string): number => {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0)
    throw new InvalidArgumentError("expected a non-negative integer");
  return n;
};

interface ServeFlags {
  host?: string;
  port?: number;
  concurrency?: number;
}

function configFrom(flags: ServeFlags): Config {
  return loadConfig(undefined, {
    ...(flags.host !== undefined && { host: flags.host }),
    ...(flags.port !== undefined && { port: flags.port }),
    ...(flags.concurrency !== undefined && { worker: { concurrency: flags.concurrency } }),
  });
}

async function serve(roles: Roles, flags: ServeFlags): Promise<void> {
  const config = configFrom(flags);
  const logger = makeLogger(config.logLevel, makeRedactor(config.sensitiveFields));
  const runtime = await startRuntime(config, roles, logger);
  if (runtime.apiUrl) {
    process.stdout.write(
      `hookrelay API listening on ${runtime.apiUrl} (OpenAPI UI at ${runtime.apiUrl}/docs)\n`,
    );
  }
  if (runtime.generatedAdminKey) {
    process.stdout.write(
      `\nAdmin API key (shown once, stored hashed; keep it safe):\n\n    ${runtime.generatedAdminKey}\n\n`,
    );
  }
  if (roles.worker) process.stdout.write(`hookrelay worker ${runtime.worker?.id} running\n`);

  let signals = 0;
  const onSignal = (signal: NodeJS.Signals) => {
    signals++;
    if (signals > 1) {
      logger.warn(
        { signal },
        "second signal: exiting now; leases will return unfinished deliveries",
      );
      process.exit(130);
    }
    logger.info({ signal }, "draining: no new work, waiting for requests in flight");
    runtime.stop().then(
      () => process.exit(0),
      (err) => {
        logger.error({ err }, "shutdown failed");
        process.exit(1);
      },
    );
  };
  process.on("SIGTERM", onSignal);
  process.on("SIGINT", onSignal);
}

// src/cli and dist/cli are both two levels below the package root.
const { version } = JSON.parse(
  readFileSync(new URL("../../package.json", import.meta.url), "utf8"),
) as { version: string };

const program = new Command()
  .name("hookrelay")
  .description("Webhook and postback delivery on PostgreSQL")
  .version(version, "-V, --version", "print the hookrelay version")
  .showHelpAfterError()
  // commander's own usage errors exit 2, like ours
  .exitOverride((err) => process.exit(err.exitCode === 1 ? 2 : err.exitCode));

const serveCommand = (name: string, description: string, roles: Roles) =>
  program
    .command(name)
    .description(description)
    .option("--host <host>", "API listen address (HOOKRELAY_HOST)")
    .option("--port <port>", "API listen port (HOOKRELAY_PORT)", intArg)
    .option(
      "--concurrency <n>",
      "requests in flight per worker (HOOKRELAY_WORKER_CONCURRENCY)",
      intArg,
    )
    .action((flags: ServeFlags) => serve(roles, flags));

serveCommand("start", "run the API and a worker in one process", { api: true, worker: true });
serveCommand("api", "run the management API only", { api: true, worker: false });
serveCommand("worker", "run a delivery worker only", { api: false, worker: true });

program
  .command("migrate")
  .description("apply database migrations and exit")
  .action(async () => {
    const config = loadConfig();
    const logger = makeLogger(config.logLevel, makeRedactor(config.sensitiveFields));
    const { pool, embedded } = await openDatabase(config, logger);
    try {
      const applied = await migrate(pool);
      process.stdout.write(
        applied.length ? `applied: ${applied.join(", ")}\n` : "schema up to date\n",
      );
    } finally {
      await pool.end();
      await embedded?.stop();
    }
  });

registerOperatorCommands(program);

program.parseAsync().catch((err: unknown) => {
  const message =
    err instanceof ApiError
      ? `${err.message} (${err.code})`
      : err instanceof HookRelayError
        ? `${err.code}: ${err.message}`
        : err instanceof Error
          ? err.message
          : String(err);
  process.stderr.write(`hookrelay: ${message}\n`);
  if (err instanceof Error && err.cause) process.stderr.write(`  cause: ${String(err.cause)}\n`);
  process.exit(err instanceof InvalidArgumentError ? 2 : ExitCode.error);
});
