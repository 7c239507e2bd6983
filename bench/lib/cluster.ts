/**
 * The bench's own PostgreSQL: an embedded cluster in a temporary folder with the settings
 * below (durability untouched: fsync, synchronous_commit and full_page_writes stay on), a
 * template database migrated for hookrelay and installed for pg-boss, and one fresh
 * database cloned from it per measured run.
 */
import { readFileSync } from "node:fs";
import { chmod, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import type pg from "pg";
import PgBoss from "pg-boss";
import { loadConfig } from "../../src/config.ts";
import { startEmbeddedPostgres } from "../../src/db/embedded.ts";
import { migrate } from "../../src/db/migrate.ts";
import { makePool } from "../../src/db/pool.ts";
import { withClient } from "../../src/db/short-client.ts";
import { ensureHistoryPartitions } from "../../src/ops/message-partitions.ts";
import { withChildren } from "./cpu.ts";

/**
 * Tuned for a 2-core machine with plenty of RAM, for short write-heavy runs. Every one is
 * an ordinary production setting; none trades durability for speed.
 */
export const PG_SETTINGS: Record<string, string> = {
  // Room for the working set of every scenario (the 1M backlog is about 400 MB).
  shared_buffers: "512MB",
  effective_cache_size: "4GB",
  // One WAL flush covers many concurrent commits; 16MB is what auto-tuning picks for 512MB.
  wal_buffers: "16MB",
  // No checkpoint in the middle of a measurement: checkpoints by time only, every 30 min.
  max_wal_size: "8GB",
  min_wal_size: "1GB",
  checkpoint_timeout: "30min",
  checkpoint_completion_target: "0.9",
  // SSD-like storage.
  random_page_cost: "1.1",
  work_mem: "16MB",
  maintenance_work_mem: "512MB",
  // JIT compiles plans whose estimated cost is high (the claim on a 1M backlog) and costs
  // tens of ms per statement there; OLTP deployments usually turn it off.
  jit: "off",
  max_connections: "200",
  // Profiling: which statements dominate (saved in the results JSON).
  shared_preload_libraries: "pg_stat_statements",
  "pg_stat_statements.track": "top",
  track_io_timing: "on",
};

export const TEMPLATE_DB = "bench_template";
export const PGBOSS_SCHEMA = "pgboss";

export interface Cluster {
  /** URL of the `postgres` maintenance database */
  adminUrl: string;
  settings: Record<string, string>;
  urlFor(database: string): string;
  /** Creates `name` from the template; returns its URL. */
  createDb(name: string): Promise<string>;
  dropDb(name: string): Promise<void>;
  /** Runs `fn` with a client on the maintenance database. */
  admin<T>(fn: (c: pg.Client) => Promise<T>): Promise<T>;
  /** The postmaster and its children right now (backends, autovacuum, WAL writer, ...). */
  pids(): number[];
  /** The cluster's data directory (what `pg_relation_filepath` paths are relative to). */
  dataDir: string;
  stop(): Promise<void>;
}

export async function startCluster(extra: string[]): Promise<Cluster> {
  const settings = { ...PG_SETTINGS };
  for (const kv of extra) {
    const eq = kv.indexOf("=");
    if (eq <= 0) throw new Error(`--pg expects name=value, got "${kv}"`);
    settings[kv.slice(0, eq)] = kv.slice(eq + 1);
  }
  const dataDir = await mkdtemp(path.join(tmpdir(), "hookrelay-bench-"));
  // a throwaway folder of our own: as root, the postgres user must enter it (docs/embedded.md)
  await chmod(dataDir, 0o755);
  const flags = Object.entries(settings).flatMap(([k, v]) => ["-c", `${k}=${v}`]);
  const db = await startEmbeddedPostgres({
    dataDir,
    port: 0,
    database: TEMPLATE_DB,
    postgresFlags: flags,
  });
  const urlFor = (database: string) => db.connectionString.replace(/\/[^/]+$/, `/${database}`);
  const adminUrl = urlFor("postgres");

  const admin = <T>(fn: (c: pg.Client) => Promise<T>): Promise<T> =>
    withClient({ connectionString: adminUrl }, fn);

  try {
    const pool = makePool({ connectionString: urlFor(TEMPLATE_DB), max: 2 });
    await migrate(pool);
    // today's periods and those ahead, as a server's first maintenance run makes them, so
    // seeded rows land where the API's would (docs/history.md), not in the default partitions
    await ensureHistoryPartitions(pool, loadConfig({}));
    await pool.end();
    // pg-boss installs its schema on start; done once here so every clone has it.
    const boss = new PgBoss({
      connectionString: urlFor(TEMPLATE_DB),
      schema: PGBOSS_SCHEMA,
      max: 2,
      supervise: false,
      schedule: false,
    });
    boss.on("error", () => undefined);
    await boss.start();
    await boss.stop({ graceful: false, wait: true });
    await admin((c) => c.query("create extension if not exists pg_stat_statements"));
  } catch (err) {
    await db.stop().catch(() => undefined);
    await rm(dataDir, { recursive: true, force: true });
    throw err;
  }

  return {
    adminUrl,
    settings,
    urlFor,
    admin,
    dataDir: path.join(dataDir, "pg"),
    pids() {
      const postmaster = Number(
        readFileSync(path.join(dataDir, "pg", "postmaster.pid"), "utf8").split("\n")[0],
      );
      return withChildren(postmaster);
    },
    async createDb(name) {
      await admin((c) =>
        c.query(`create database ${c.escapeIdentifier(name)} template ${TEMPLATE_DB}`),
      );
      return urlFor(name);
    },
    async dropDb(name) {
      await admin((c) =>
        c.query(`drop database if exists ${c.escapeIdentifier(name)} with (force)`),
      );
    },
    async stop() {
      await db.stop();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/** pg_stat_statements: reset, and the top statements by total execution time. */
export async function resetStatements(cluster: Cluster): Promise<void> {
  await cluster.admin((c) => c.query("select pg_stat_statements_reset()"));
}

export interface StatementStat {
  query: string;
  calls: number;
  totalMs: number;
  meanMs: number;
  /** time per planning; 0 unless pg_stat_statements.track_planning is on */
  meanPlanMs: number;
  /** how many times it was planned (a cached generic plan is not planned again) */
  plans: number;
  rowsPerCall: number;
  sharedBlksHit: number;
  sharedBlksRead: number;
  walBytes: number;
}

export async function topStatements(cluster: Cluster, limit = 8): Promise<StatementStat[]> {
  const { rows } = await cluster.admin((c) =>
    c.query(
      `select left(regexp_replace(query, '\\s+', ' ', 'g'), 160) as query, calls::float8 as calls,
              total_exec_time as total_ms, mean_exec_time as mean_ms, mean_plan_time as plan_ms, plans::float8 as plans,
              rows::float8 as rows,
              shared_blks_hit::float8 as hit, shared_blks_read::float8 as read, wal_bytes::float8 as wal
       from pg_stat_statements order by total_exec_time desc limit $1::int`,
      [limit],
    ),
  );
  return rows.map((r) => ({
    query: r.query,
    calls: r.calls,
    totalMs: Math.round(r.total_ms),
    meanMs: Number(r.mean_ms.toFixed(3)),
    meanPlanMs: Number(r.plan_ms.toFixed(3)),
    plans: r.plans,
    rowsPerCall: Number((r.rows / Math.max(1, r.calls)).toFixed(1)),
    sharedBlksHit: r.hit,
    sharedBlksRead: r.read,
    walBytes: r.wal,
  }));
}
