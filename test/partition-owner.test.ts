/**
 * Partition upkeep when the server's role has DML rights only (docs/history.md, "Creation
 * ahead of time"; src/ops/partition-owner.ts): given HOOKRELAY_MIGRATION_DATABASE_URL, the
 * server creates attempt partitions at start and in the maintenance task, and retention
 * drops them, as that role (the owner, from docs/database.md's scripts); without it, none
 * is created or dropped and retention deletes the rows in batches.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { migrate } from "../src/db/migrate.ts";
import { makePool, type Pool } from "../src/db/pool.ts";
import { attemptIdAt } from "../src/db/sql/attempt-ids.ts";
import { silentLogger } from "../src/logger.ts";
import { ensureAttemptPartitions, partitionName } from "../src/ops/attempt-partitions.ts";
import { NO_PARTITION_OWNER, withPartitionOwner } from "../src/ops/partition-owner.ts";
import { maintenanceTasks, makeProcessLogging, startRuntime } from "../src/runtime.ts";
import { makeRedactor } from "../src/security/redact.ts";
import { makeSecretBox } from "../src/security/secret-box.ts";
import { createTestDb, type TestDb } from "./helpers/db.ts";
import { testConfig } from "./helpers/harness.ts";
import { linesInto } from "./helpers/log-lines.ts";
import { documentedRoleScripts, dropRoles, runSql, uniqueRole, urlAs } from "./helpers/roles.ts";

const SCHEMA = "hookrelay_po";
const DAY = 86_400_000;
const owner = uniqueRole("hr_po_owner");
const app = uniqueRole("hr_po_app");

let db: TestDb;
let appPool: Pool;

/** The partitions of a table in the schema (attempts by default), by name. */
async function partitions(table = "attempts"): Promise<string[]> {
  const { rows } = await db.pool.query(
    `select c.relname as name from pg_inherits i join pg_class c on c.oid = i.inhrelid
     where i.inhparent = '${SCHEMA}.${table}'::regclass order by 1`,
  );
  return rows.map((r) => r.name as string);
}

/** the low bits of the ids attemptAt writes: two of them in the same second differ */
let written = 0;

/** An attempt written by the app role at `atMs`; its partition's name. */
async function attemptAt(atMs: number): Promise<string> {
  written += 1;
  const { rows } = await appPool.query(
    `insert into attempts (id, delivery_id, message_id, endpoint_id, app_id, attempt_number, trigger,
                           url, started_at, latency_ms, outcome, status_code, created_at)
     values ($1::bigint, 0, 'msg_po', 'ep_po', 'app_po', 1, 'scheduled', 'http://x', $2::timestamptz,
             5, 'success', 200, $2::timestamptz)
     returning tableoid::regclass::text as p`,
    [attemptIdAt(atMs) + written, new Date(atMs)],
  );
  return String(rows[0].p).replace(`${SCHEMA}.`, "");
}

const config = (migrationDatabaseUrl?: string, aheadDays = 2) =>
  testConfig({
    partitions: { interval: "day", aheadMs: aheadDays * DAY },
    databaseUrl: urlAs(db.url, app),
    dbSchema: SCHEMA,
    host: "127.0.0.1",
    port: 0,
    adminKey: "hr_admin_partition_owner_test_key",
    dbPoolSize: 4,
    logLevel: "warn",
    migrationDatabaseUrl,
  });

const task = (name: string, migrationDatabaseUrl?: string, aheadDays = 2) => {
  const found = maintenanceTasks(
    config(migrationDatabaseUrl, aheadDays),
    makeSecretBox(undefined, []),
    makeRedactor(),
    silentLogger,
  ).find((t) => t.name === name);
  if (!found) throw new Error(`no task ${name}`);
  return found;
};

beforeAll(async () => {
  db = await createTestDb({ template: false });
  const scripts = documentedRoleScripts({ owner, app, schema: SCHEMA });
  await runSql(db.url, scripts.admin);
  await runSql(urlAs(db.url, owner), scripts.owner);
  const ownerPool = makePool({ connectionString: urlAs(db.url, owner), max: 1 });
  try {
    await migrate(ownerPool, { schema: SCHEMA });
  } finally {
    await ownerPool.end();
  }
  appPool = makePool({ connectionString: urlAs(db.url, app), max: 4 });
});

afterAll(async () => {
  await appPool?.end();
  await db?.drop();
  await dropRoles([owner, app]);
});

describe("partition upkeep through HOOKRELAY_MIGRATION_DATABASE_URL", () => {
  const today = Math.floor(Date.now() / DAY) * DAY;

  test("without it the app role creates none: its attempts wait in the default partition, and start says so", async () => {
    expect(await withPartitionOwner(appPool, undefined, async (o) => o)).toBeNull();
    await task("partitions").run(appPool);
    expect(await partitions()).toEqual(["attempts_default", "attempts_legacy"]);
    expect(await attemptAt(Date.now())).toBe("attempts_default");
    const lines: string[] = [];
    const destination = linesInto(lines);
    const rt = await startRuntime(
      config(),
      { api: true, worker: false },
      makeProcessLogging(config(), destination),
    );
    await rt.stop();
    expect(lines.join("")).toContain("HOOKRELAY_MIGRATION_DATABASE_URL names no role that does");
    expect(NO_PARTITION_OWNER).toMatch(
      /stay in attempts_default, messages_default and deliveries_default/,
    );
    expect(await partitions("messages")).toEqual(["messages_default", "messages_legacy"]);
  });

  test("with it a server starting as the app role creates today's and the next days' partitions, which take over the waiting rows", async () => {
    const rt = await startRuntime(
      config(urlAs(db.url, owner)),
      { api: true, worker: false },
      { logger: silentLogger, redactor: makeRedactor() },
    );
    await rt.stop();
    expect(await partitions()).toEqual(
      expect.arrayContaining([0, 1, 2].map((d) => partitionName(today + d * DAY, "day"))),
    );
    const { rows } = await appPool.query("select count(*)::int as n from attempts_default");
    expect(rows[0].n).toBe(0);
    // messages' and deliveries' periods alike
    for (const table of ["messages", "deliveries"] as const)
      expect(await partitions(table)).toEqual(
        expect.arrayContaining([0, 1, 2].map((d) => partitionName(today + d * DAY, "day", table))),
      );
    expect(await attemptAt(Date.now())).toBe(partitionName(today, "day"));
  });

  test("the maintenance task creates them, and retention drops an old one, as the owner", async () => {
    const old = today - 40 * DAY;
    const ownerPool = makePool({
      connectionString: urlAs(db.url, owner),
      max: 1,
      searchPath: SCHEMA,
    });
    try {
      // a period 40 days back, as an installation running since then has
      await ensureAttemptPartitions(ownerPool, { interval: "day", aheadMs: 0 }, 60 * DAY, old);
    } finally {
      await ownerPool.end();
    }
    expect(await attemptAt(old + 1000)).toBe(partitionName(old, "day"));

    // without the URL: the old period's row is deleted, the partition stays
    await task("retention").run(appPool);
    expect(await partitions()).toContain(partitionName(old, "day"));
    expect(await attemptAt(old + 2000)).toBe(partitionName(old, "day"));

    // with it: the partition is dropped whole, and the task makes the days ahead
    await task("retention", urlAs(db.url, owner)).run(appPool);
    expect(await partitions()).not.toContain(partitionName(old, "day"));
    expect(await partitions()).not.toContain(partitionName(today + 4 * DAY, "day"));
    await task("partitions", undefined, 4).run(appPool);
    expect(await partitions()).not.toContain(partitionName(today + 4 * DAY, "day"));
    await task("partitions", urlAs(db.url, owner), 4).run(appPool);
    expect(await partitions()).toContain(partitionName(today + 4 * DAY, "day"));
  });
});
