/**
 * hookrelay's own processes for tests (`node dist/cli/main.js <command>`): spawned with a
 * clean environment (nothing of the test runner's, NODE_OPTIONS etc., leaks in), output
 * captured, every one tracked so that `killAll()` in afterAll ends exactly the processes
 * this file started, by PID.
 */
import { type ChildProcess, spawn } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { waitFor } from "./receiver.ts";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
// The compiled CLI, as users run it (`npm test` builds first).
const BIN = path.join(ROOT, "dist", "cli", "main.js");

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface HookrelayProcess {
  child: ChildProcess;
  pid: number;
  readonly stdout: string;
  readonly stderr: string;
  exited: Promise<Exit>;
}

const started = new Set<HookrelayProcess>();

export function spawnHookrelay(args: string[], env: Record<string, string>): HookrelayProcess {
  const child = spawn(process.execPath, [BIN, ...args], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/tmp", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  if (child.pid === undefined) throw new Error(`could not spawn hookrelay ${args.join(" ")}`);
  let stdout = "";
  let stderr = "";
  child.stdout?.on("data", (c: Buffer) => {
    stdout += c.toString();
  });
  child.stderr?.on("data", (c: Buffer) => {
    stderr += c.toString();
  });
  const exited = new Promise<Exit>((resolve) =>
    child.on("exit", (code, signal) => resolve({ code, signal })),
  );
  const proc: HookrelayProcess = {
    child,
    pid: child.pid,
    get stdout() {
      return stdout;
    },
    get stderr() {
      return stderr;
    },
    exited,
  };
  started.add(proc);
  void exited.then(() => started.delete(proc));
  return proc;
}

export const isRunning = (p: HookrelayProcess) =>
  p.child.exitCode === null && p.child.signalCode === null;

/** A worker's environment: fast polling, receivers on loopback allowed, quiet logs. */
export function workerEnv(
  dbUrl: string,
  extra: Record<string, string> = {},
): Record<string, string> {
  return {
    DATABASE_URL: dbUrl,
    HOOKRELAY_LOG_LEVEL: "warn",
    HOOKRELAY_POLL_INTERVAL_MS: "50",
    HOOKRELAY_SSRF_ALLOWLIST: "127.0.0.0/8",
    ...extra,
  };
}

/** Starts `n` worker processes and resolves once every one says it is running. */
export async function startWorkers(
  n: number,
  dbUrl: string,
  extra: Record<string, string> = {},
): Promise<HookrelayProcess[]> {
  const workers = Array.from({ length: n }, () =>
    spawnHookrelay(["worker"], workerEnv(dbUrl, extra)),
  );
  await waitFor(
    () => {
      for (const p of workers) {
        if (!isRunning(p)) throw new Error(`worker exited early:\n${p.stdout}\n${p.stderr}`);
      }
      return workers.every((p) => /worker .* running/.test(p.stdout));
    },
    40_000,
    n === 1 ? "the worker process to start" : "the worker processes to start",
  );
  return workers;
}

/** SIGKILLs every process this test file started that still runs, and waits for them. */
export async function killAll(): Promise<void> {
  const list = [...started];
  for (const p of list) if (isRunning(p)) process.kill(p.pid, "SIGKILL");
  await Promise.all(list.map((p) => p.exited));
}
