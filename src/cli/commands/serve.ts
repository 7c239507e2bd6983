/**
 * start, api, worker: the long-running roles. The server modules load only when one of
 * these runs, so the operator commands start fast.
 */
import { type Command, InvalidArgumentError } from "commander";
import type { Config } from "../../config.ts";
import { maskPassword } from "../../db/embedded-state.ts";
import type { Roles } from "../../runtime.ts";

const portArg = (value: string): number => {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65_535)
    throw new InvalidArgumentError("expected a port number (0-65535)");
  return n;
};
const countArg = (value: string): number => {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError("expected an integer >= 1");
  return n;
};

interface ServeFlags {
  host?: string;
  port?: number;
  concurrency?: number;
  showDbPassword?: boolean;
}

async function serve(roles: Roles, flags: ServeFlags): Promise<void> {
  const [{ loadConfig }, { makeProcessLogging, startRuntime }] = await Promise.all([
    import("../../config.ts"),
    import("../../runtime.ts"),
  ]);
  const config: Config = loadConfig(undefined, {
    ...(flags.host !== undefined && { host: flags.host }),
    ...(flags.port !== undefined && { port: flags.port }),
    ...(flags.concurrency !== undefined && { worker: { concurrency: flags.concurrency } }),
  });
  const logging = makeProcessLogging(config);
  const { logger } = logging;
  const runtime = await startRuntime(config, roles, logging);
  const out = (line: string) => process.stdout.write(`${line}\n`);
  if (runtime.apiUrl) {
    out(`hookrelay API listening on ${runtime.apiUrl} (OpenAPI UI at ${runtime.apiUrl}/docs)`);
    out(`dashboard: ${runtime.apiUrl}/dashboard (sign in with an API key)`);
  }
  if (runtime.embedded) {
    const shown = flags.showDbPassword
      ? runtime.connectionString
      : maskPassword(runtime.connectionString);
    out(`embedded PostgreSQL: ${shown}`);
    if (!flags.showDbPassword)
      out("  (the whole string, for the outbox library: npx hookrelay db-url)");
  }
  if (runtime.generatedAdminKey) {
    out(
      `\nAdmin API key (shown once, stored hashed; keep it safe):\n\n    ${runtime.generatedAdminKey}\n`,
    );
  }
  if (roles.worker) out(`hookrelay worker ${runtime.worker?.id} running`);

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

export function registerServeCommands(program: Command): void {
  const serveCommand = (name: string, description: string, roles: Roles) =>
    program
      .command(name)
      .description(description)
      .option("--host <host>", "API listen address (HOOKRELAY_HOST)")
      .option("--port <port>", "API listen port (HOOKRELAY_PORT)", portArg)
      .option(
        "--concurrency <n>",
        "requests in flight per worker (HOOKRELAY_WORKER_CONCURRENCY)",
        countArg,
      )
      .option("--show-db-password", "print the embedded database's connection string unmasked")
      .action((flags: ServeFlags) => serve(roles, flags));

  serveCommand("start", "run the API and a worker in one process", { api: true, worker: true });
  serveCommand("api", "run the management API only", { api: true, worker: false });
  serveCommand("worker", "run a delivery worker only", { api: false, worker: true });
}
