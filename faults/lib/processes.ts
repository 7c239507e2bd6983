/**
 * hookrelay processes of a fault run (`node dist/cli/main.js api|worker`, as users run
 * them), each tracked by PID: the run kills only its own children, by PID, and tells a
 * SIGKILL it sent from an exit the process made by itself (a self-exit: what must never
 * happen, whatever the database does).
 */
import { type ChildProcess, spawn } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";

export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const BIN = path.join(REPO_ROOT, "dist", "cli", "main.js");

export interface Proc {
  role: "api" | "worker";
  pid: number;
  child: ChildProcess;
  /** resolves once it printed its ready line (rejects if it exits first) */
  ready: Promise<string>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** the run sent it SIGKILL (or ended it at the end of the run) */
  killedByRun: boolean;
  /** its last lines of output */
  tail(): string;
}

export interface SelfExit {
  role: string;
  pid: number;
  code: number | null;
  signal: NodeJS.Signals | null;
  tail: string;
}

export interface ProcessSet {
  start(role: "api" | "worker"): Proc;
  /** SIGKILL by PID */
  kill(p: Proc): void;
  readonly selfExits: SelfExit[];
  /** ends every child still running (SIGKILL, by PID) and waits for them */
  killAll(): Promise<void>;
}

export function makeProcessSet(env: Record<string, string>): ProcessSet {
  const live = new Set<Proc>();
  const selfExits: SelfExit[] = [];

  function start(role: "api" | "worker"): Proc {
    const child = spawn(process.execPath, [BIN, role], {
      cwd: REPO_ROOT,
      env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/tmp", ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    if (child.pid === undefined) throw new Error(`could not start hookrelay ${role}`);
    const lines: string[] = [];
    let out = "";
    const keep = (chunk: Buffer) => {
      const text = chunk.toString("utf8");
      out += text;
      if (out.length > 4_096) out = out.slice(-4_096);
      lines.push(...text.split("\n").filter(Boolean));
      if (lines.length > 20) lines.splice(0, lines.length - 20);
    };
    child.stdout?.on("data", keep);
    child.stderr?.on("data", keep);
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) =>
      child.on("exit", (code, signal) => r({ code, signal })),
    );
    const ready = new Promise<string>((resolve, reject) => {
      const pattern =
        role === "worker" ? /hookrelay worker \S+ running/ : /API listening on (http:\/\/\S+)/;
      const onData = () => {
        const m = pattern.exec(out);
        if (m) {
          child.stdout?.off("data", onData);
          resolve(m[1] ?? m[0]);
        }
      };
      child.stdout?.on("data", onData);
      void exited.then(() => reject(new Error(`${role} exited before it was ready:\n${out}`)));
    });
    ready.catch(() => undefined);
    const proc: Proc = {
      role,
      pid: child.pid,
      child,
      ready,
      exited,
      killedByRun: false,
      tail: () => lines.join("\n"),
    };
    live.add(proc);
    void exited.then(({ code, signal }) => {
      live.delete(proc);
      if (!proc.killedByRun)
        selfExits.push({ role, pid: proc.pid, code, signal, tail: proc.tail() });
    });
    return proc;
  }

  function kill(p: Proc): void {
    p.killedByRun = true;
    try {
      process.kill(p.pid, "SIGKILL");
    } catch {
      // already gone
    }
  }

  return {
    start,
    kill,
    selfExits,
    async killAll() {
      const list = [...live];
      for (const p of list) kill(p);
      await Promise.all(list.map((p) => p.exited));
    },
  };
}
