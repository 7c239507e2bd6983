/**
 * Where a command reads and writes: stdout, stderr, stdin, its environment and its exit
 * code. A command run by `hookrelay` (main.ts) uses the process's own; a command run in
 * process by run.ts with a given CliIo uses that one, so several can run at once in one
 * process (tests) without sharing output or environment. Commands reach it through
 * cliIo() instead of `process.*` (the serving commands excepted: they own the process).
 *
 * Only a run with IO of its own is tracked through AsyncLocalStorage. The process's own run
 * (main.ts) is kept in a plain variable: on Node 20 an AsyncLocalStorage that has run once
 * turns on async hooks for the whole process, a JS callback on every promise, timer and
 * socket made, and `hookrelay worker` / `api` serve from inside that run (it cost the worker
 * about a tenth of its CPU: docs/performance.md, scenario 3's history).
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
/** the run with the process's own IO, if one has started (main.ts starts one) */
let processRun: CliRun | null = null;

/** The IO of the command running here (the process's outside any run). */
export function cliIo(): CliIo {
  return current.getStore()?.io ?? processIo;
}

/** Sets the exit code of the command running here (the process's outside any run). */
export function setExitCode(code: number): void {
  const run = current.getStore() ?? processRun;
  if (run) run.exitCode = code;
  else process.exitCode = code;
}

/** Runs fn as one command with the given IO (the process's by default). */
export function withCliRun<T>(run: CliRun, fn: () => Promise<T>): Promise<T> {
  if (run.io !== processIo) return current.run(run, fn);
  // the process's own IO: what cliIo() answers outside any run; no AsyncLocalStorage
  processRun = run;
  return fn();
}

export { processIo };
