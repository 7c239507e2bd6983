/** The `hookrelay` command tree, built without running it (main.ts runs it; tests walk it). */
import { readFileSync } from "node:fs";
import { Command } from "commander";
import { registerApiKeyCommands } from "./commands/api-keys.ts";
import { registerApplicationCommands } from "./commands/applications.ts";
import { registerBenchCommand } from "./commands/bench.ts";
import { registerDatabaseCommands } from "./commands/database.ts";
import { registerDeadLetterCommands } from "./commands/dead-letters.ts";
import { registerEndpointReplayCommands } from "./commands/endpoint-replay.ts";
import { registerEndpointCommands } from "./commands/endpoints.ts";
import { registerHealthCommands } from "./commands/health.ts";
import { registerMaintenanceCommands } from "./commands/maintenance.ts";
import { registerMessageCommands } from "./commands/messages.ts";
import { registerServeCommands } from "./commands/serve.ts";
import { registerTaskCommands } from "./commands/tasks.ts";

// src/cli and dist/cli are both two levels below the package root.
const { version } = JSON.parse(
  readFileSync(new URL("../../package.json", import.meta.url), "utf8"),
) as { version: string };

export function buildProgram(): Command {
  const program = new Command()
    .name("hookrelay")
    .description("Webhook and postback delivery on PostgreSQL")
    .version(version, "-V, --version", "print the hookrelay version")
    .showHelpAfterError()
    // commander's own usage errors exit 2, like ours (inherited by every command below)
    .exitOverride((err) => process.exit(err.exitCode === 1 ? 2 : err.exitCode));
  registerServeCommands(program);
  registerDatabaseCommands(program);
  registerHealthCommands(program);
  registerDeadLetterCommands(program);
  registerApplicationCommands(program);
  registerEndpointCommands(program);
  registerEndpointReplayCommands(program);
  registerTaskCommands(program);
  registerMessageCommands(program);
  registerApiKeyCommands(program);
  registerMaintenanceCommands(program);
  registerBenchCommand(program);
  return program;
}
