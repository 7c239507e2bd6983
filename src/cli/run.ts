/**
 * Runs one `hookrelay` command to its end and answers its exit code: the action's own
 * (alerts' 3), 2 for a usage error, 1 for any other failure with one line on stderr.
 * main.ts runs it with the process's IO; tests run commands in process with their own
 * (io.ts), so most CLI tests need no child process.
 */
import { CommanderError, InvalidArgumentError } from "commander";
import { ApiError, HookRelayError } from "../errors.ts";
import { type CliIo, cliIo, processIo, withCliRun } from "./io.ts";
import { ExitCode } from "./output.ts";
import { buildProgram } from "./program.ts";

export interface CommandResult {
  code: number;
  /** the command stopped early (an error, help, a usage error): the process exits now */
  stopped: boolean;
}

function describeError(err: unknown): string {
  return err instanceof ApiError
    ? `${err.message} (${err.code})`
    : err instanceof HookRelayError
      ? `${err.code}: ${err.message}`
      : err instanceof Error
        ? err.message
        : String(err);
}

/** `hookrelay <args>` (args without node and the script) with the given IO. */
export async function runCommand(args: string[], io: CliIo = processIo): Promise<CommandResult> {
  const run = { io, exitCode: undefined as number | undefined };
  return withCliRun(run, async () => {
    try {
      await buildProgram().parseAsync(args, { from: "user" });
      return { code: run.exitCode ?? ExitCode.ok, stopped: false };
    } catch (err) {
      // commander's help, version and usage errors (it printed them): exit codes of program.ts
      if (err instanceof CommanderError && !(err instanceof InvalidArgumentError))
        return { code: err.exitCode, stopped: true };
      const { stderr } = cliIo();
      stderr.write(`hookrelay: ${describeError(err)}\n`);
      if (err instanceof HookRelayError && err.cause && !(err instanceof ApiError))
        stderr.write(`  cause: ${String(err.cause)}\n`);
      return { code: err instanceof InvalidArgumentError ? 2 : ExitCode.error, stopped: true };
    }
  });
}
