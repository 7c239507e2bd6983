/**
 * Where a command reads and writes: stdout, stderr, stdin, its environment and its exit
 * code. A command run by `hookrelay` (main.ts) uses the process's own; a command run in
 * process by run.ts with a given CliIo uses that one, so several can run at once in one
 * process (tests) without sharing output or environment. Commands reach it through
 * cliIo() instead of `process.*` (the serving commands excepted: they own the process).
 */
import { AsyncLocalStorage } from "node:async_hooks";

export interface CliIo {
  stdout: { write(text: string): unknown };
  stderr: { write(text: string): unknown };
  stdin: AsyncIterable<Buffer | string>;
  env: Record<string, string | undefined>;
}

/** The process's streams and environment, looked up when used (stdin opens only if read). */
const processIo: CliIo = {
  get stdout() {
    return process.stdout;
  },
  get stderr() {
    return process.stderr;
  },
  get stdin() {
    return process.stdin;
  },
  get env() {
    return process.env;
  },
};

/** One command run: its IO and the exit code its action sets. */
export interface CliRun {
  io: CliIo;
  exitCode: number | undefined;
}

const current = new AsyncLocalStorage<CliRun>();

/** The IO of the command running here (the process's outside any run). */
export function cliIo(): CliIo {
  return current.getStore()?.io ?? processIo;
}

/** Sets the exit code of the command running here (the process's outside any run). */
export function setExitCode(code: number): void {
  const run = current.getStore();
  if (run) run.exitCode = code;
  else process.exitCode = code;
}

/** Runs fn as one command with the given IO (the process's by default). */
export function withCliRun<T>(run: CliRun, fn: () => Promise<T>): Promise<T> {
  return current.run(run, fn);
}

export { processIo };
