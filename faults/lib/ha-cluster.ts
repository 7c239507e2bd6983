/**
 * A two-node HA PostgreSQL for the failover scenario (docs/reliability.md, Failover
 * (Patroni)), as Patroni documents it, all on 127.0.0.1 in one temporary folder: one etcd
 * member as Patroni's store, two Patroni nodes running Debian's PostgreSQL 15 as the
 * `postgres` system user, synchronous replication on, and haproxy in front, routing to
 * whichever node Patroni's REST API says is the primary. Every process is ours, started
 * here and stopped by PID.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chmod, chown, mkdir, mkdtemp, open, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { ensurePostgresUser } from "../../src/db/postgres-as-root.ts";
import { withClient } from "../../src/db/short-client.ts";
import { freePort } from "../../src/lib/free-port.ts";
import { haproxyConfig, type PatroniSettings, patroniConfig } from "./ha-config.ts";

export const PG_BIN = "/usr/lib/postgresql/15/bin";
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface HaNode {
  name: string;
  dir: string;
  pgPort: number;
  apiPort: number;
}

export interface Member {
  name: string;
  role: string;
  state: string;
}

export interface HaCluster {
  /** superuser URL of database `db` through haproxy */
  url(db: string): string;
  nodes: HaNode[];
  settings: PatroniSettings;
  /** the members as Patroni's REST API of any node that answers sees them */
  members(): Promise<Member[]>;
  /** the PID in the data folder's postmaster.pid of `node` */
  postmasterPid(node: HaNode): Promise<number>;
  /** the last lines of each log (for a failed run) */
  logTails(lines?: number): Promise<string>;
  /** stops every process (Patroni first, so that it stops PostgreSQL) and removes the folder */
  destroy(): Promise<void>;
}

async function isAlive(pid: number): Promise<boolean> {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function kill(pid: number | undefined, signal: NodeJS.Signals): void {
  try {
    if (pid) process.kill(pid, signal);
  } catch {
    // already gone
  }
}

async function exitOf(child: ChildProcess, ms: number): Promise<boolean> {
  if (child.exitCode !== null || child.signalCode !== null) return true;
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), ms);
    child.once("exit", () => {
      clearTimeout(timer);
      resolve(true);
    });
  });
}

export async function startHaCluster(
  settings: PatroniSettings,
  log: (line: string) => void,
): Promise<HaCluster> {
  const user = await ensurePostgresUser();
  const dir = await mkdtemp(path.join(tmpdir(), "hookrelay-failover-"));
  // the postgres user must enter it (we are root: docs/embedded.md)
  await chmod(dir, 0o755);
  const password = randomBytes(12).toString("hex");
  const children: { name: string; child: ChildProcess }[] = [];
  const logs: string[] = [];

  async function start(name: string, command: string, args: string[], asPostgres: boolean) {
    const file = path.join(dir, `${name}.log`);
    logs.push(file);
    const out = await open(file, "a");
    const child = spawn(command, args, {
      cwd: dir,
      stdio: ["ignore", out.fd, out.fd],
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: dir, LANG: "C.UTF-8" },
      ...(asPostgres && { uid: user.uid, gid: user.gid }),
    });
    await out.close();
    child.on("error", (err) => log(`${name}: ${err.message}`));
    children.push({ name, child });
    return child;
  }

  const etcdClient = await freePort();
  const etcdPeer = await freePort();
  const nodes: HaNode[] = [];
  for (const name of ["pg1", "pg2"]) {
    const nodeDir = path.join(dir, name);
    await mkdir(nodeDir, { mode: 0o700 });
    await chown(nodeDir, user.uid, user.gid);
    nodes.push({ name, dir: nodeDir, pgPort: await freePort(), apiPort: await freePort() });
  }
  const haPort = await freePort();
  const url = (db: string) =>
    `postgres://postgres:${password}@127.0.0.1:${haPort}/${encodeURIComponent(db)}`;

  async function members(): Promise<Member[]> {
    for (const n of nodes) {
      try {
        const res = await fetch(`http://127.0.0.1:${n.apiPort}/cluster`, {
          signal: AbortSignal.timeout(1_000),
        });
        if (!res.ok) continue;
        return ((await res.json()) as { members: Member[] }).members;
      } catch {
        // that node's Patroni is not answering: ask the other
      }
    }
    return [];
  }

  async function postmasterPid(node: HaNode): Promise<number> {
    const text = await readFile(path.join(node.dir, "data", "postmaster.pid"), "utf8");
    const pid = Number(text.split("\n")[0]);
    if (!Number.isInteger(pid) || pid <= 0) throw new Error(`no postmaster pid for ${node.name}`);
    return pid;
  }

  async function logTails(lines = 15): Promise<string> {
    const parts: string[] = [];
    for (const file of logs) {
      const text = await readFile(file, "utf8").catch(() => "");
      parts.push(`--- ${path.basename(file)}\n${text.split("\n").slice(-lines).join("\n")}`);
    }
    return parts.join("\n");
  }

  async function destroy(): Promise<void> {
    const stopAll = async (which: (name: string) => boolean, ms: number) => {
      const list = children.filter((c) => which(c.name));
      for (const c of list) kill(c.child.pid, "SIGTERM");
      const done = await Promise.all(list.map((c) => exitOf(c.child, ms)));
      list.forEach((c, i) => {
        if (!done[i]) kill(c.child.pid, "SIGKILL");
      });
    };
    // Patroni stops its PostgreSQL on SIGTERM; a postmaster it left behind is killed by PID
    await stopAll((n) => n.startsWith("patroni"), 20_000);
    for (const n of nodes) {
      const pid = await postmasterPid(n).catch(() => 0);
      if (pid > 0 && (await isAlive(pid))) kill(pid, "SIGKILL");
    }
    await stopAll((n) => !n.startsWith("patroni"), 5_000);
    await rm(dir, { recursive: true, force: true, maxRetries: 10, retryDelay: 200 });
  }

  try {
    const etcdDir = path.join(dir, "etcd");
    await start(
      "etcd",
      "etcd",
      [
        "--name=faults",
        `--data-dir=${etcdDir}`,
        `--listen-client-urls=http://127.0.0.1:${etcdClient}`,
        `--advertise-client-urls=http://127.0.0.1:${etcdClient}`,
        `--listen-peer-urls=http://127.0.0.1:${etcdPeer}`,
        `--initial-advertise-peer-urls=http://127.0.0.1:${etcdPeer}`,
        `--initial-cluster=faults=http://127.0.0.1:${etcdPeer}`,
        "--initial-cluster-state=new",
        `--initial-cluster-token=hookrelay-faults-${process.pid}`,
      ],
      false,
    );
    await waitFor("etcd", 30_000, async () => {
      const res = await fetch(`http://127.0.0.1:${etcdClient}/health`).catch(() => null);
      return res?.ok === true;
    });

    for (const [i, n] of nodes.entries()) {
      const file = path.join(n.dir, "patroni.yml");
      await writeFile(
        file,
        patroniConfig({ node: n, etcdPort: etcdClient, password, settings, binDir: PG_BIN }),
      );
      await chown(file, user.uid, user.gid);
      await start(`patroni-${n.name}`, "patroni", [file], true);
      // the first node bootstraps the cluster; the second then clones it
      if (i === 0)
        await waitFor("the first Patroni node to lead", 60_000, async () =>
          (await members()).some((m) => m.role === "leader" && m.state === "running"),
        );
    }
    await waitFor("a streaming synchronous standby", 90_000, async () =>
      (await members()).some(
        (m) => m.role === "sync_standby" && (m.state === "running" || m.state === "streaming"),
      ),
    );

    const haCfg = path.join(dir, "haproxy.cfg");
    await writeFile(haCfg, haproxyConfig({ port: haPort, nodes }));
    await start("haproxy", "haproxy", ["-f", haCfg], false);
    // haproxy counts a server up until its checks failed `fall` times: wait until six
    // connections in a row (round robin over both) reach the primary
    let inARow = 0;
    await waitFor("haproxy to route only to the primary", 30_000, async () => {
      // haproxy cuts the sessions of a server it marks down, this probe's among them
      const primary = await withClient(
        { connectionString: url("postgres"), connectionTimeoutMillis: 2_000 },
        async (client) =>
          (await client.query<{ recovery: boolean }>("select pg_is_in_recovery() as recovery"))
            .rows[0]?.recovery === false,
      ).catch(() => false);
      inARow = primary ? inARow + 1 : 0;
      return inARow >= 6;
    });
  } catch (err) {
    const tails = await logTails(30);
    await destroy().catch(() => undefined);
    throw new Error(`${(err as Error).message}\n${tails}`);
  }

  return { url, nodes, settings, members, postmasterPid, logTails, destroy };

  async function waitFor(what: string, ms: number, check: () => Promise<boolean>) {
    const until = Date.now() + ms;
    while (Date.now() < until) {
      for (const c of children)
        if (c.child.exitCode !== null || c.child.signalCode !== null)
          throw new Error(`${c.name} exited while waiting for ${what}`);
      if (await check()) return;
      await sleep(250);
    }
    throw new Error(`timed out after ${ms / 1000} s waiting for ${what}`);
  }
}
