/**
 * Debian's PostgreSQL 15 and PgBouncer 1.18, started for a test on free loopback ports in a
 * temp folder (as the postgres system user when this process is root, since neither runs as
 * root), and stopped by PID. `pgbouncerMissing()` says what is absent: the pooler tests
 * skip loudly outside CI and fail in CI (docs/database.md, "Tests").
 */
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { chown, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import net from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { ensurePostgresUser } from "../../src/db/postgres-as-root.ts";
import { initCluster, type RunAs, startCluster } from "../../src/db/postgres-cluster.ts";
import { withClient } from "../../src/db/short-client.ts";
import { freePort } from "../../src/lib/free-port.ts";

const PG_ROOT = "/usr/lib/postgresql/15";
const PGBOUNCER = "/usr/sbin/pgbouncer";

/** What is not installed, or null when both are. */
export function pgbouncerMissing(): string | null {
  const missing = [
    !existsSync(path.join(PG_ROOT, "bin", "postgres")) && "postgresql-15",
    !existsSync(PGBOUNCER) && "pgbouncer",
  ].filter(Boolean);
  return missing.length ? missing.join(" and ") : null;
}

export type PoolMode = "transaction" | "statement" | "session";

export interface PooledDatabase {
  /** PostgreSQL itself */
  directUrl: string;
  /** the same database through PgBouncer in `mode` */
  pooledUrl: string;
  /** another PgBouncer on the same database, for the other modes this test asks for */
  pooler(mode: PoolMode): Promise<string>;
  /** a streaming standby of the database (pg_basebackup -R): its URL */
  standby(): Promise<string>;
  stop(): Promise<void>;
}

async function waitForPort(port: number, child: ChildProcess, log: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (child.exitCode !== null)
      throw new Error(`pgbouncer exited: ${await readFile(log, "utf8")}`);
    const open = await new Promise<boolean>((resolve) => {
      const s = net.connect(port, "127.0.0.1", () => {
        s.destroy();
        resolve(true);
      });
      s.on("error", () => resolve(false));
    });
    if (open) return;
    await sleep(50);
  }
  throw new Error(`pgbouncer did not listen on ${port}: ${await readFile(log, "utf8")}`);
}

function run(file: string, args: string[], runAs: RunAs, env: Record<string, string>) {
  return new Promise<void>((resolve, reject) => {
    const child = spawn(file, args, {
      ...(runAs ?? {}),
      env: { ...process.env, ...env },
      stdio: ["ignore", "ignore", "pipe"],
    });
    let err = "";
    child.stderr?.on("data", (c: Buffer) => {
      err += c.toString();
    });
    child.on("error", reject);
    child.on("close", (code) =>
      code === 0 ? resolve() : reject(new Error(`${path.basename(file)} exited ${code}: ${err}`)),
    );
  });
}

/**
 * PostgreSQL 15 with a database `hookrelay`, and PgBouncer in `mode` in front of it with a
 * small server pool (`poolSize`, default 5), so that server connections really are shared.
 * `settings`: more server settings (`name=value`, as `postgres -c` takes them).
 */
export async function startPooledDatabase(
  options: { mode?: PoolMode; poolSize?: number; settings?: string[] } = {},
): Promise<PooledDatabase> {
  const runAs: RunAs = process.getuid?.() === 0 ? await ensurePostgresUser() : null;
  const dir = await mkdtemp(path.join(tmpdir(), "hookrelay-pgb-"));
  if (runAs) await chown(dir, runAs.uid, runAs.gid);
  const clusterDir = path.join(dir, "pg");
  await mkdir(clusterDir, { mode: 0o700 });
  if (runAs) await chown(clusterDir, runAs.uid, runAs.gid);
  const password = randomBytes(12).toString("hex");
  const binaries = { root: PG_ROOT, version: "15" };
  await initCluster({ binaries, clusterDir, user: "postgres", password, runAs });
  const pgPort = await freePort();
  const cluster = await startCluster({
    binaries,
    clusterDir,
    port: pgPort,
    flags: ["max_connections=60", "fsync=off", ...(options.settings ?? [])].flatMap((s) => [
      "-c",
      s,
    ]),
    runAs,
    logFile: path.join(dir, "postgres.log"),
  });
  const directUrl = `postgres://postgres:${password}@127.0.0.1:${pgPort}/hookrelay`;
  await withClient(
    { connectionString: `postgres://postgres:${password}@127.0.0.1:${pgPort}/postgres` },
    (admin) => admin.query("create database hookrelay"),
  );

  const bouncers: ChildProcess[] = [];
  const pooler = async (mode: PoolMode): Promise<string> => {
    const port = await freePort();
    const name = `pgbouncer-${mode}-${port}`;
    const ini = path.join(dir, `${name}.ini`);
    const log = path.join(dir, `${name}.log`);
    const users = path.join(dir, `${name}.users`);
    await writeFile(users, `"postgres" "${password}"\n`);
    await writeFile(
      ini,
      [
        "[databases]",
        `hookrelay = host=127.0.0.1 port=${pgPort} dbname=hookrelay user=postgres password=${password}`,
        "[pgbouncer]",
        "listen_addr = 127.0.0.1",
        `listen_port = ${port}`,
        "unix_socket_dir =",
        "auth_type = trust",
        `auth_file = ${users}`,
        `pool_mode = ${mode}`,
        "max_client_conn = 200",
        `default_pool_size = ${options.poolSize ?? 5}`,
        "ignore_startup_parameters = extra_float_digits,options",
        `logfile = ${log}`,
        `pidfile = ${path.join(dir, `${name}.pid`)}`,
        "",
      ].join("\n"),
    );
    for (const f of [ini, users]) if (runAs) await chown(f, runAs.uid, runAs.gid);
    await writeFile(log, "");
    if (runAs) await chown(log, runAs.uid, runAs.gid);
    const child = spawn(PGBOUNCER, [ini], { ...(runAs ?? {}), stdio: "ignore", detached: true });
    child.unref();
    bouncers.push(child);
    await waitForPort(port, child, log);
    return `postgres://postgres:${password}@127.0.0.1:${port}/hookrelay`;
  };
  const clusters = [cluster];
  const standby = async (): Promise<string> => {
    const standbyDir = path.join(dir, `standby-${clusters.length}`);
    await run(
      path.join(PG_ROOT, "bin", "pg_basebackup"),
      [
        "-D",
        standbyDir,
        "-R",
        "-c",
        "fast",
        "-h",
        "127.0.0.1",
        "-p",
        String(pgPort),
        "-U",
        "postgres",
      ],
      runAs,
      { PGPASSWORD: password },
    );
    const port = await freePort();
    clusters.push(
      await startCluster({
        binaries,
        clusterDir: standbyDir,
        port,
        flags: ["-c", "max_connections=60"],
        runAs,
        logFile: path.join(dir, `standby-${port}.log`),
      }),
    );
    return `postgres://postgres:${password}@127.0.0.1:${port}/hookrelay`;
  };
  const pooledUrl = await pooler(options.mode ?? "transaction");
  return {
    directUrl,
    pooledUrl,
    pooler,
    standby,
    async stop() {
      for (const b of bouncers) {
        if (b.exitCode === null && b.pid) {
          try {
            process.kill(b.pid, "SIGINT");
          } catch {
            // gone already
          }
        }
      }
      for (const c of clusters.reverse()) await c.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
