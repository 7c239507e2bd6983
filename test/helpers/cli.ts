/**
 * Runs the CLI two ways, each answering its exit code, stdout and stderr:
 * - runCli: the compiled CLI (`node dist/cli/main.js ...`) as an operator would, a child
 *   process with a clean environment plus what the test gives. At most a few run at once
 *   (2 cores), each is killed after 45 s. For what only a process shows (the binary, its
 *   exit, signals, files relative to its folder).
 * - runCliInProcess: the same command tree run in this process (src/cli/run.ts) with its
 *   own environment (the same clean one), stdin, stdout and stderr (src/cli/io.ts): the
 *   same commands, parsing, requests and messages without a Node start per command.
 */
import { spawn } from "node:child_process";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { Readable } from "node:stream";
import type { FastifyInstance } from "fastify";
import { runCommand } from "../../src/cli/run.ts";

const ROOT = path.resolve(import.meta.dirname, "../..");
const BIN = path.join(ROOT, "dist", "cli", "main.js");
const MAX_PROCESSES = 4;

export interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface CliOptions {
  env?: Record<string, string | undefined>;
  stdin?: string;
  cwd?: string;
}

let running = 0;
const waiting: (() => void)[] = [];
async function slot(): Promise<() => void> {
  if (running >= MAX_PROCESSES) await new Promise<void>((r) => waiting.push(r));
  running++;
  return () => {
    running--;
    waiting.shift()?.();
  };
}

/** The environment a command gets: a clean one plus what the test gives. */
const cliEnv = (options: CliOptions) => ({
  PATH: process.env.PATH,
  HOME: process.env.HOME,
  ...(process.env.TMPDIR && { TMPDIR: process.env.TMPDIR }),
  HOOKRELAY_LOG_LEVEL: "warn",
  ...options.env,
});

/** `hookrelay <args>` as a child process; resolves with its exit code and output. */
export async function runCli(args: string[], options: CliOptions = {}): Promise<Run> {
  const release = await slot();
  try {
    return await new Promise<Run>((resolve, reject) => {
      const child = spawn(process.execPath, [BIN, ...args], {
        cwd: options.cwd ?? ROOT,
        env: cliEnv(options),
        stdio: [options.stdin === undefined ? "ignore" : "pipe", "pipe", "pipe"],
      });
      let stdout = "";
      let stderr = "";
      child.stdout!.on("data", (c: Buffer) => {
        stdout += c.toString("utf8");
      });
      child.stderr!.on("data", (c: Buffer) => {
        stderr += c.toString("utf8");
      });
      const timer = setTimeout(() => child.kill("SIGKILL"), 45_000);
      child.on("error", reject);
      child.on("close", (code) => {
        clearTimeout(timer);
        resolve({ code, stdout, stderr });
      });
      if (options.stdin !== undefined) child.stdin!.end(options.stdin);
    });
  } finally {
    release();
  }
}

/**
 * `hookrelay <args>` run in this process; resolves with its exit code and output. Not for
 * the serving commands (start, api, worker: they own the process) nor a `cwd`.
 */
export async function runCliInProcess(args: string[], options: CliOptions = {}): Promise<Run> {
  if (options.cwd !== undefined) throw new Error("runCliInProcess has no cwd: use runCli");
  let stdout = "";
  let stderr = "";
  const { code } = await runCommand(args, {
    stdout: { write: (text: string) => (stdout += text) },
    stderr: { write: (text: string) => (stderr += text) },
    stdin: Readable.from(options.stdin === undefined ? [] : [Buffer.from(options.stdin)]),
    env: cliEnv(options),
  });
  return { code, stdout, stderr };
}

/**
 * A test file's `hookrelay`, run in process against its server: `target()` is read at each
 * call, so it may name what beforeAll sets up (the server's URL and key, the data folder).
 */
export const cliAgainst =
  (target: () => { url: string; key: string; dir: string }) =>
  (args: string[], options: CliOptions = {}): Promise<Run> => {
    const { url, key, dir } = target();
    return runCliInProcess(args, {
      ...options,
      env: { HOOKRELAY_URL: url, HOOKRELAY_KEY: key, HOOKRELAY_DATA_DIR: dir, ...options.env },
    });
  };

/** Explains a failed expectation on a run with its whole output. */
export const show = (r: Run) => `exit ${r.code}\n--- stdout\n${r.stdout}\n--- stderr\n${r.stderr}`;

/** Makes an API built for inject() listen on a free loopback port; returns its base URL. */
export async function listenOnLoopback(api: FastifyInstance): Promise<string> {
  await api.listen({ host: "127.0.0.1", port: 0 });
  return `http://127.0.0.1:${(api.server.address() as AddressInfo).port}`;
}
