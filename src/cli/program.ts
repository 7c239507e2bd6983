/** The `hookrelay` command tree, built without running it (main.ts runs it; tests walk it). */
import { readFileSync } from "node:fs";
import { Command, CommanderError } from "commander";
import { registerApiKeyCommands } from "./commands/api-keys.ts";
import { registerApplicationCommands } from "./commands/applications.ts";
import { registerAttemptCommands } from "./commands/attempts.ts";
import { registerBenchCommand } from "./commands/bench.ts";
import { registerDatabaseCommands } from "./commands/database.ts";
import { registerDeadLetterCommands } from "./commands/dead-letters.ts";
import { registerEgressCommand } from "./commands/egress.ts";
import { registerEndpointHeadersCommand } from "./commands/endpoint-headers.ts";
import { registerEndpointReplayCommands } from "./commands/endpoint-replay.ts";
import { registerEndpointCommands } from "./commands/endpoints.ts";
import { registerHealthCommands } from "./commands/health.ts";
import { registerMaintenanceCommands } from "./commands/maintenance.ts";
import { registerMcpCommand } from "./commands/mcp.ts";
import { registerMessageLookupCommands } from "./commands/message-lookup.ts";
import { registerMessageCommands } from "./commands/messages.ts";
import { registerMetricsCommand } from "./commands/metrics.ts";
import { registerServeCommands } from "./commands/serve.ts";
import { registerTaskCommands } from "./commands/tasks.ts";
import { cliIo } from "./io.ts";

// src/cli and dist/cli are both two levels below the package root.
const { version } = JSON.parse(
  readFileSync(new URL("../../package.json", import.meta.url), "utf8"),
) as { version: string };

/**
 * `json`: the command was given `--json`, so its failures are written as JSON by run.ts and
 * commander writes nothing on stderr (no usage text, no help after an error).
 */
export function buildProgram(options: { json?: boolean } = {}): Command {
  const program = new Command()
    .name("hookrelay")
    .description("Webhook and postback delivery on PostgreSQL")
    .version(version, "-V, --version", "print the hookrelay version")
    .showHelpAfterError()
    // help and usage errors are written to the command's IO (io.ts) and stop it; commander's
    // own usage errors exit 2, like ours (both inherited by every command below)
    .configureOutput({
      writeOut: (text) => cliIo().stdout.write(text),
      writeErr: (text) => (options.json ? undefined : cliIo().stderr.write(text)),
    })
    .exitOverride((err) => {
      throw new CommanderError(err.exitCode === 1 ? 2 : err.exitCode, err.code, err.message);
    });
  registerServeCommands(program);
  registerDatabaseCommands(program);
  registerHealthCommands(program);
  registerDeadLetterCommands(program);
  registerApplicationCommands(program);
  registerEndpointCommands(program);
  registerEndpointHeadersCommand(program);
  registerEndpointReplayCommands(program);
  registerEgressCommand(program);
  registerTaskCommands(program);
  registerMessageCommands(program);
  registerMessageLookupCommands(program);
  registerAttemptCommands(program);
  registerMetricsCommand(program);
  registerApiKeyCommands(program);
  registerMaintenanceCommands(program);
  registerBenchCommand(program);
  registerMcpCommand(program, version);
  return program;
}
