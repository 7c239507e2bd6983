/**
 * An operator command: it has `--url`, `--key` and `--json`, and its action receives the
 * connection to the server (connection.ts) before its own arguments.
 */
import type { Command } from "commander";
import { type ConnectionFlags, connect, type ServerConnection } from "./connection.ts";
import { setExitCode } from "./io.ts";
import { ExitCode } from "./output.ts";

export function serverCommand(parent: Command, spec: string, description: string): Command {
  return parent
    .command(spec)
    .description(description)
    .option("--url <url>", "the hookrelay API (HOOKRELAY_URL; default: npm start in this folder)")
    .option("--key <key>", "API key (HOOKRELAY_KEY; default: the local server's CLI key)")
    .option("--json", "JSON output");
}

/** Wraps an action: connects first, and sets the exit code it returns. */
export function onServer<A extends unknown[]>(
  fn: (server: ServerConnection, ...args: A) => Promise<number | undefined>,
) {
  return async (...args: A) => {
    // commander passes the positional arguments, then the options, then the command
    const flags = args[args.length - 2] as ConnectionFlags;
    const server = await connect(flags);
    setExitCode((await fn(server, ...args)) ?? ExitCode.ok);
  };
}
