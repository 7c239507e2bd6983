/**
 * Child processes of the bench: hookrelay roles (`node dist/cli/main.js worker|api`) and the
 * bench's own TypeScript children (receiver, pg-boss worker). Every child is tracked by PID
 * and ended by PID only: SIGTERM first, SIGKILL after a grace period.
 */
import { type ChildProcess, fork, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

const live = new Set<ChildProcess>();

/**
 * The Node flags hookrelay runs with, as `npm start` passes them
 * (`node <flags> dist/cli/main.js start`; README asks the same of other launches): the
 * bench runs hookrelay as users are told to run it.
 */
export const HOOKRELAY_NODE_FLAGS: string[] = (
  JSON.parse(readFileSync(path.join(REPO_ROOT, "package.json"), "utf8")).scripts.start as string
)
  .split(/\s+/)
  .filter((word) => word.startsWith("--"));

/** Set by main for --cpu-prof: hookrelay processes write V8 CPU profiles here. */
export const profiling = { dir: null as string | null };

/**
 * Set by main for --quick: environment of every hookrelay process before a scenario's own.
 * A smoke run's tiny sizes need few database connections, and each one a process opens is
 * a PostgreSQL backend to fork and warm (docs/performance.md, "The test suite's time").
 */
export const quickEnv: Record<string, string> = {};

export interface Child {
  proc: ChildProcess;
  pid: number;
  /** the last lines the child printed (diagnostics) */
  output(): string;
}

function track(proc: ChildProcess, name: string): Child {
  if (proc.pid === undefined) throw new Error(`${name} did not start`);
  live.add(proc);
  proc.once("exit", () => live.delete(proc));
  const lines: string[] = [];
  const keep = (chunk: Buffer) => {
    lines.push(...chunk.toString("utf8").split("\n").filter(Boolean));
    if (lines.length > 40) lines.splice(0, lines.length - 40);
  };
  proc.stdout?.on("data", keep);
  proc.stderr?.on("data", keep);
  return { proc, pid: proc.pid, output: () => lines.join("\n") };
}

/** Resolves with the first stdout match of `ready`; rejects on exit or after `timeoutMs`. */
function waitForLine(
  child: Child,
  ready: RegExp,
  timeoutMs: number,
  name: string,
): Promise<RegExpMatchArray> {
  return new Promise((resolve, reject) => {
    let buffer = "";
    const timer = setTimeout(
      () => done(new Error(`${name} not ready after ${timeoutMs} ms:\n${child.output()}`)),
      timeoutMs,
    );
    const onData = (chunk: Buffer) => {
      buffer += chunk.toString("utf8");
      const match = buffer.match(ready);
      if (match) done(null, match);
    };
    const onExit = (code: number | null) =>
      done(new Error(`${name} exited (${code}) before it was ready:\n${child.output()}`));
    function done(err: Error | null, match?: RegExpMatchArray) {
      clearTimeout(timer);
      child.proc.stdout?.off("data", onData);
      child.proc.off("exit", onExit);
      if (err) reject(err);
      else resolve(match!);
    }
    child.proc.stdout?.on("data", onData);
    child.proc.once("exit", onExit);
  });
}

export interface HookrelayProcess extends Child {
  /** API base URL (api role) */
  url: string | null;
}

/**
 * How a hookrelay process runs: the compiled build users run (`dist/`), or the TypeScript
 * source through tsx, as before the build existed (scenario 10 compares the two).
 */
export type HookrelayRuntime = "dist" | "source";

/** Starts `hookrelay worker` or `hookrelay api` against `databaseUrl`; resolves once it runs. */
export async function startHookrelay(
  role: "worker" | "api",
  databaseUrl: string,
  env: Record<string, string> = {},
  runtime: HookrelayRuntime = "dist",
): Promise<HookrelayProcess> {
  const prof = profiling.dir ? ["--cpu-prof", `--cpu-prof-dir=${profiling.dir}`] : [];
  const entry =
    runtime === "dist"
      ? [path.join(REPO_ROOT, "dist/cli/main.js")]
      : ["--import", "tsx", path.join(REPO_ROOT, "src/cli/main.ts")];
  const args = [...HOOKRELAY_NODE_FLAGS, ...prof, ...entry, role];
  const proc = spawn(process.execPath, args, {
    cwd: REPO_ROOT,
    stdio: ["ignore", "pipe", "pipe"],
    env: {
      ...process.env,
      DATABASE_URL: databaseUrl,
      HOOKRELAY_LOG_LEVEL: "warn",
      HOOKRELAY_SSRF_ALLOWLIST: "127.0.0.1",
      HOOKRELAY_HOST: "127.0.0.1",
      HOOKRELAY_PORT: "0",
      HOOKRELAY_SHUTDOWN_TIMEOUT_MS: "2000",
      ...quickEnv,
      ...env,
    },
  });
  const child = track(proc, `hookrelay ${role}`);
  const ready =
    role === "worker" ? /hookrelay worker \S+ running/ : /API listening on (http:\/\/\S+)/;
  const match = await waitForLine(child, ready, 60_000, `hookrelay ${role}`);
  return { ...child, url: role === "api" ? (match[1] ?? null) : null };
}

/** Forks one of bench/children/*.ts (through tsx) with an IPC channel. */
export function forkChild(file: string, args: string[]): Child {
  const proc = fork(path.join(REPO_ROOT, "bench/children", file), args, {
    cwd: REPO_ROOT,
    execArgv: ["--import", "tsx"],
    stdio: ["ignore", "pipe", "pipe", "ipc"],
  });
  return track(proc, file);
}

/** Ends a child by PID: SIGTERM, then SIGKILL after `graceMs`. Resolves when it has exited. */
export async function stopChild(child: Child, graceMs = 5_000): Promise<void> {
  const { proc } = child;
  if (proc.exitCode !== null || proc.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => proc.once("exit", () => resolve()));
  signal(child.pid, "SIGTERM");
  const timer = setTimeout(() => {
    if (proc.exitCode === null && proc.signalCode === null) signal(child.pid, "SIGKILL");
  }, graceMs);
  await exited;
  clearTimeout(timer);
}

function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch {
    // already gone
  }
}

/** Kills every child still running (by PID). Used on errors and signals. */
export function killAllChildren(): void {
  for (const proc of live) {
    if (proc.pid !== undefined && proc.exitCode === null && proc.signalCode === null)
      signal(proc.pid, "SIGKILL");
  }
}

/** Peak resident set size (VmHWM) of a live process in MiB, from /proc; NaN if unreadable. */
export function peakRssMiB(pid: number): number {
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    const kb = Number(/^VmHWM:\s+(\d+)\s+kB/m.exec(status)?.[1]);
    return kb / 1024;
  } catch {
    return Number.NaN;
  }
}
