/**
 * Debian's squid as a forward proxy for the egress tests (docs/egress.md): started in the
 * foreground (-N) on a free 127.0.0.1 port with a configuration this helper writes, its
 * pid, cache and logs in a temp directory, stopped by its pid. Optionally with basic
 * authentication (basic_ncsa_auth over an htpasswd file made with `openssl passwd`).
 * `accessLog()` reads its access log: one line per request it carried (CONNECT lines
 * name the address asked for).
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { chmod, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import net from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { freePort } from "../../src/lib/free-port.ts";

export const SQUID = "/usr/sbin/squid";
export const squidInstalled = existsSync(SQUID);

export interface Squid {
  port: number;
  url: string;
  /** the access log's lines so far */
  accessLog(): Promise<string[]>;
  /**
   * The access log once `done` says so (squid logs a CONNECT when its tunnel closes):
   * polls for up to 10 s, then returns the log as it is.
   */
  logUntil(done: (lines: string[]) => boolean): Promise<string[]>;
  stop(): Promise<void>;
}

async function waitForPort(port: number, child: ChildProcess, log: string): Promise<void> {
  const until = Date.now() + 20_000;
  while (Date.now() < until) {
    if (child.exitCode !== null) {
      const text = await readFile(log, "utf8").catch(() => "");
      throw new Error(`squid exited (${child.exitCode}): ${text.slice(-2000)}`);
    }
    const open = await new Promise<boolean>((resolve) => {
      const socket = net.connect(port, "127.0.0.1");
      socket.once("connect", () => {
        socket.destroy();
        resolve(true);
      });
      socket.once("error", () => resolve(false));
    });
    if (open) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error("squid did not listen within 20 s");
}

/** Starts squid; `auth` makes it ask for basic credentials. */
export async function startSquid(auth?: { user: string; password: string }): Promise<Squid> {
  const dir = await mkdtemp(path.join(tmpdir(), "hookrelay-squid-"));
  // run as root, squid switches to its own user, which must be able to write here
  await chmod(dir, 0o777);
  const port = await freePort();
  const accessLog = path.join(dir, "access.log");
  const cacheLog = path.join(dir, "cache.log");
  const lines = [
    `http_port 127.0.0.1:${port}`,
    `pid_filename ${path.join(dir, "squid.pid")}`,
    `cache_log ${cacheLog}`,
    `access_log stdio:${accessLog}`,
    `coredump_dir ${dir}`,
    "cache deny all",
    "cache_mem 8 MB",
    "shutdown_lifetime 0 seconds",
    "dns_v4_first on",
    "acl tunnel method CONNECT",
  ];
  if (auth) {
    const passwd = path.join(dir, "passwd");
    const hash = execFileSync("openssl", ["passwd", "-apr1", auth.password]).toString().trim();
    await writeFile(passwd, `${auth.user}:${hash}\n`);
    await chmod(passwd, 0o644);
    lines.push(
      `auth_param basic program /usr/lib/squid/basic_ncsa_auth ${passwd}`,
      "auth_param basic realm hookrelay-test",
      "acl users proxy_auth REQUIRED",
      "http_access allow users",
      "http_access deny all",
    );
  } else {
    lines.push("http_access allow all");
  }
  const conf = path.join(dir, "squid.conf");
  await writeFile(conf, `${lines.join("\n")}\n`);
  await chmod(conf, 0o644);
  const child = spawn(SQUID, ["-N", "-f", conf], { stdio: "ignore" });
  child.once("error", () => {});
  try {
    await waitForPort(port, child, cacheLog);
  } catch (err) {
    if (child.pid !== undefined && child.exitCode === null) process.kill(child.pid, "SIGKILL");
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
  let stopped = false;
  const readLog = async () => {
    const text = await readFile(accessLog, "utf8").catch(() => "");
    return text.split("\n").filter(Boolean);
  };
  return {
    port,
    url: `http://127.0.0.1:${port}`,
    accessLog: readLog,
    async logUntil(done) {
      for (let i = 0; i < 100; i++) {
        const lines = await readLog();
        if (done(lines)) return lines;
        await new Promise((r) => setTimeout(r, 100));
      }
      return readLog();
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      if (child.exitCode === null && child.pid !== undefined) {
        const exited = new Promise((resolve) => child.once("exit", resolve));
        process.kill(child.pid, "SIGTERM");
        const timer = setTimeout(() => {
          if (child.exitCode === null && child.pid !== undefined)
            process.kill(child.pid, "SIGKILL");
        }, 5_000);
        await exited;
        clearTimeout(timer);
      }
      await rm(dir, { recursive: true, force: true });
    },
  };
}
