/**
 * Debian's PostgreSQL 15 with TLS on, for the TLS tests: a throwaway CA made with `openssl`,
 * a server certificate for `localhost` (so 127.0.0.1 is a host name it does not name),
 * client certificates, and pg_hba rules for each way in. Started on a free loopback port in
 * a temp folder (as the postgres system user when this process is root), stopped by PID.
 *
 * Roles: `hookrelay` (password, TLS or not), `certuser` (a client certificate only, over
 * TLS), `tlsonly` (password, refused without TLS).
 */
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import {
  appendFile,
  chmod,
  chown,
  copyFile,
  mkdir,
  mkdtemp,
  rm,
  writeFile,
} from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import pg from "pg";
import { ensurePostgresUser } from "../../src/db/postgres-as-root.ts";
import { initCluster, type RunAs, startCluster } from "../../src/db/postgres-cluster.ts";
import { freePort } from "../../src/lib/free-port.ts";
import { makeCertificates, type TlsFiles } from "./tls-certificates.ts";

export type { TlsFiles };

const PG_ROOT = "/usr/lib/postgresql/15";

/** What is not installed, or null when everything is. */
export function tlsPostgresMissing(): string | null {
  const missing = [
    !existsSync(path.join(PG_ROOT, "bin", "postgres")) && "postgresql-15",
    !["/usr/bin/openssl", "/bin/openssl"].some(existsSync) && "openssl",
  ].filter(Boolean);
  return missing.length ? missing.join(" and ") : null;
}

export interface TlsPostgres {
  port: number;
  files: TlsFiles;
  /** a URL for `role` (password roles get their password) to `host`, with extra query */
  url(options?: {
    role?: "hookrelay" | "certuser" | "tlsonly";
    host?: string;
    query?: string;
  }): string;
  /** the server's certificate becomes an expired one (signed by the same CA) */
  serveExpiredCert(): Promise<void>;
  /** TLS off on the server (ssl = off); the `tlsonly` role then cannot get in at all */
  turnTlsOff(): Promise<void>;
  stop(): Promise<void>;
}

export async function startTlsPostgres(): Promise<TlsPostgres> {
  const runAs: RunAs = process.getuid?.() === 0 ? await ensurePostgresUser() : null;
  const dir = await mkdtemp(path.join(tmpdir(), "hookrelay-tls-"));
  const own = async (p: string) => {
    if (runAs) await chown(p, runAs.uid, runAs.gid);
  };
  await own(dir);
  const files = await makeCertificates(path.join(dir, "certs"));
  // the server's copies: its key must be its own and 0600
  const serverDir = path.join(dir, "server");
  await mkdir(serverDir, { mode: 0o700 });
  await own(serverDir);
  for (const from of [
    files.serverCert,
    files.serverKey,
    files.expiredCert,
    files.expiredKey,
    files.ca,
  ]) {
    const to = path.join(serverDir, path.basename(from));
    await copyFile(from, to);
    await chmod(to, 0o600);
    await own(to);
  }

  const clusterDir = path.join(dir, "pg");
  await mkdir(clusterDir, { mode: 0o700 });
  await own(clusterDir);
  const password = randomBytes(12).toString("hex");
  const binaries = { root: PG_ROOT, version: "15" };
  await initCluster({ binaries, clusterDir, user: "hookrelay", password, runAs });
  const hba = path.join(clusterDir, "pg_hba.conf");
  await writeFile(
    hba,
    [
      "# type     database user      address       method",
      "hostssl    all      certuser  127.0.0.1/32  cert",
      "hostnossl  all      tlsonly   127.0.0.1/32  reject",
      "host       all      tlsonly   127.0.0.1/32  scram-sha-256",
      "host       all      hookrelay 127.0.0.1/32  scram-sha-256",
      "",
    ].join("\n"),
  );
  await own(hba);
  // in postgresql.conf, not flags: ALTER SYSTEM (serveExpiredCert, turnTlsOff) must win
  const conf = path.join(clusterDir, "postgresql.conf");
  await appendFile(
    conf,
    [
      "ssl = on",
      `ssl_cert_file = '${serverDir}/server.crt'`,
      `ssl_key_file = '${serverDir}/server.key'`,
      `ssl_ca_file = '${serverDir}/ca.crt'`,
      "fsync = off",
      "",
    ].join("\n"),
  );
  const port = await freePort();
  const cluster = await startCluster({
    binaries,
    clusterDir,
    port,
    flags: [],
    runAs,
    logFile: path.join(dir, "postgres.log"),
  });
  const base = (role: string, host: string) =>
    `postgres://${role}${role === "certuser" ? "" : `:${password}`}@${host}:${port}/hookrelay`;
  const admin = async (sql: string[], database = "hookrelay") => {
    const url = base("hookrelay", "127.0.0.1").replace(/\/hookrelay$/, `/${database}`);
    const c = new pg.Client({ connectionString: url, ssl: false });
    await c.connect();
    try {
      for (const s of sql) await c.query(s);
    } finally {
      await c.end();
    }
  };
  await admin(
    [
      "create database hookrelay",
      "create role certuser login",
      `create role tlsonly login password '${password}'`,
    ],
    "postgres",
  );
  return {
    port,
    files,
    url({ role = "hookrelay", host = "localhost", query } = {}) {
      return `${base(role, host)}${query ? `?${query}` : ""}`;
    },
    async serveExpiredCert() {
      await admin([
        `alter system set ssl_cert_file = '${serverDir}/expired.crt'`,
        `alter system set ssl_key_file = '${serverDir}/expired.key'`,
        "select pg_reload_conf()",
      ]);
    },
    async turnTlsOff() {
      await admin(["alter system set ssl = off", "select pg_reload_conf()"]);
    },
    async stop() {
      await cluster.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
