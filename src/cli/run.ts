/**
 * Runs one `hookrelay` command to its end and answers its exit code: the action's own
 * (alerts' 3), 2 for a usage error, 1 for any other failure with one line on stderr, or
 * with `--json` one JSON object on stdout: `{"error":{"code","message"}}` (and `status`
 * when the server refused), the code one of src/errors.ts's. main.ts runs it with the
 * process's IO; tests run commands in process with their own (io.ts), so most CLI tests
 * need no child process.
 */
import { CommanderError, InvalidArgumentError } from "commander";
import { ApiError, HookRelayError } from "../errors.ts";
import { ServerUnreachableError } from "./connection.ts";
import { errorJson } from "./error-json.ts";
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
    : err instanceof ServerUnreachableError
      ? err.message
      : err instanceof HookRelayError
        ? `${err.code}: ${err.message}`
        : err instanceof Error
          ? err.message
          : String(err);
}

/** `--json` among the options (words after `--` are arguments, not options). */
const wantsJson = (args: string[]) => {
  const end = args.indexOf("--");
  return (end === -1 ? args : args.slice(0, end)).includes("--json");
};

/** `hookrelay <args>` (args without node and the script) with the given IO. */
export async function runCommand(args: string[], io: CliIo = processIo): Promise<CommandResult> {
  const run = { io, exitCode: undefined as number | undefined };
  const json = wantsJson(args);
  return withCliRun(run, async () => {
    try {
      await buildProgram({ json }).parseAsync(args, { from: "user" });
      return { code: run.exitCode ?? ExitCode.ok, stopped: false };
    } catch (err) {
      const usage = err instanceof CommanderError;
      const code = usage ? (err.exitCode === 1 ? 2 : err.exitCode) : ExitCode.error;
      // help or the version, asked for
      if (usage && err.exitCode === 0) return { code: 0, stopped: true };
      if (json) {
        cliIo().stdout.write(`${JSON.stringify(errorJson(err))}\n`);
        return { code, stopped: true };
      }
      // commander's usage errors: it printed them (program.ts)
      if (usage && !(err instanceof InvalidArgumentError)) return { code, stopped: true };
      const { stderr } = cliIo();
      stderr.write(`hookrelay: ${describeError(err)}\n`);
      if (
        err instanceof HookRelayError &&
        err.cause &&
        !(err instanceof ApiError) &&
        !(err instanceof ServerUnreachableError)
      )
        stderr.write(`  cause: ${String(err.cause)}\n`);
      return { code, stopped: true };
    }
  });
}
