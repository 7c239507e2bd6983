/**
 * Partitioned history (docs/history.md): attempts partitioned by ranges of time-carrying
 * ids; partitions created ahead, a missing one caught by the default partition and taken
 * over when it is created; retention dropping whole partitions and nothing else; time
 * bounds pruning partitions; the migration runner's no-transaction steps.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { loadConfig, type PartitionConfig, type RetentionConfig } from "../src/config.ts";
import { migrate, splitStatements } from "../src/db/migrate.ts";
import type { Pool, Queryable } from "../src/db/pool.ts";
import { listAttempts } from "../src/db/queries/attempts.ts";
import { attemptIdAt, attemptsSinceSql, LEGACY_ATTEMPT_ID_END } from "../src/db/sql/attempt-ids.ts";
import {
  ensureAttemptPartitions,
  listAttemptPartitions,
  partitionName,
  partitionNotes,
  uncovered,
} from "../src/ops/attempt-partitions.ts";
import { purgeExpiredUntil } from "../src/ops/retention.ts";
import { createTestDb, type TestDb } from "./helpers/db.ts";
import { messageIdAt } from "./helpers/message-ids.ts";

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const DAILY: PartitionConfig = { interval: "day", aheadMs: 2 * DAY };

/** An attempt written at `atMs` (epoch ms) as the result writer writes it, but at that time. */
async function attemptAt(pool: Pool, atMs: number, endpointId = "ep_h", k = 0): Promise<number> {
  const { rows } = await pool.query(
    `insert into attempts (id, delivery_id, message_id, endpoint_id, app_id, attempt_number, trigger,
                           url, started_at, latency_ms, outcome, status_code, created_at)
     values ($1::bigint, 0, 'msg_h', $2::text, 'app_h', 1, 'scheduled', 'http://x', $3::timestamptz, 5,
             'success', 200, $3::timestamptz)
     returning id`,
    [attemptIdAt(atMs) + k, endpointId, new Date(atMs)],
  );
  return Number(rows[0].id);
}

/** The daily partition holding `ms`. */
const dayOf = (ms: number) => partitionName(ms - (ms % DAY), "day");

/** Partitions for every day of the last `days` days and two ahead, as a running installation has. */
async function history(pool: Pool, days: number) {
  await ensureAttemptPartitions(
    pool,
    { interval: "day", aheadMs: (days + 2) * DAY },
    days * DAY,
    Date.now() - days * DAY,
  );
}

/** An attempt inserted the way the result writer does: id and created_at from the database. */
async function attemptNow(pool: Pool): Promise<number> {
  const { rows } = await pool.query(
    `insert into attempts (delivery_id, message_id, endpoint_id, app_id, attempt_number, trigger,
                           url, started_at, latency_ms, outcome, status_code)
     values (0, 'msg_h', 'ep_h', 'app_h', 1, 'scheduled', 'http://x', now(), 5, 'success', 200)
     returning id`,
  );
  return Number(rows[0].id);
}

const partitionOf = async (pool: Pool, id: number) =>
  (await pool.query("select tableoid::regclass::text as p from attempts where id = $1", [id]))
    .rows[0]?.p as string | undefined;

describe("helpers", () => {
  test("partition names say their start; uncovered() finds the gaps between partitions", () => {
    expect(partitionName(Date.UTC(2026, 11, 6), "day")).toBe("attempts_p20261206");
    expect(partitionName(Date.UTC(2026, 11, 6), "hour")).toBe("attempts_p2026120600");
    expect(partitionName(Date.UTC(2026, 11, 6, 13), "day")).toBe("attempts_p2026120613");
    expect(partitionName(Date.UTC(2026, 11, 6, 13), "hour")).toBe("attempts_p2026120613");
    expect(partitionName(Date.UTC(2026, 11, 6, 13, 30), "hour")).toBe("attempts_p202612061330");
    const parts = [
      { name: "a", lo: 10, hi: 20 },
      { name: "b", lo: 30, hi: 40 },
    ];
    expect(uncovered(0, 50, parts)).toEqual([
      [0, 10],
      [20, 30],
      [40, 50],
    ]);
    expect(uncovered(12, 18, parts)).toEqual([]);
    expect(uncovered(15, 35, parts)).toEqual([[20, 30]]);
  });

  test("a retention shorter than a partition, or partitions not far enough ahead, is reported at start", () => {
    const retention = { attemptsMs: 6 * HOUR } as RetentionConfig;
    expect(partitionNotes({ retention, partitions: DAILY })[0]).toMatch(
      /shorter than one attempts partition \(day\): attempts are kept up to 30 h/,
    );
    expect(
      partitionNotes({ retention, partitions: { interval: "hour", aheadMs: 2 * DAY } }),
    ).toEqual([]);
    expect(
      partitionNotes({
        retention: { attemptsMs: 30 * DAY } as RetentionConfig,
        partitions: { interval: "day", aheadMs: HOUR },
      }),
    ).toHaveLength(1);
  });

  test("HOOKRELAY_PARTITION_INTERVAL is day (default) or hour; anything else is refused at start", () => {
    expect(loadConfig({}).partitions).toEqual({ interval: "day", aheadMs: 2 * DAY });
    expect(loadConfig({ HOOKRELAY_PARTITION_INTERVAL: "hour" }).partitions.interval).toBe("hour");
    expect(() => loadConfig({ HOOKRELAY_PARTITION_INTERVAL: "week" })).toThrow(
      /HOOKRELAY_PARTITION_INTERVAL must be day or hour, got "week"/,
    );
  });

  test("splitStatements splits after each line ending in ; outside $$ bodies", () => {
    const sql = [
      "-- hookrelay:no-transaction",
      "-- a comment",
      "do $$",
      "begin",
      "  perform 1;",
      "end",
      "$$;",
      "",
      "create index concurrently if not exists x_idx",
      "  on x (a);",
      "-- trailing comment",
    ].join("\n");
    const parts = splitStatements(sql);
    expect(parts).toHaveLength(2);
    expect(parts[0]).toContain("perform 1;");
    expect(parts[1]).toContain("create index concurrently");
  });
});

describe("partitions of attempts", () => {
  let db: TestDb;
  beforeAll(async () => {
    db = await createTestDb();
  });
  afterAll(() => db?.drop());

  test("an insert with no partition for its time lands in the default partition; creating the partition takes it over", async () => {
    const pool = db.pool;
    expect(await listAttemptPartitions(pool)).toEqual([
      { name: "attempts_legacy", lo: Number.NEGATIVE_INFINITY, hi: LEGACY_ATTEMPT_ID_END },
    ]);
    const early = await attemptNow(pool);
    expect(early).toBeGreaterThanOrEqual(LEGACY_ATTEMPT_ID_END);
    expect(await partitionOf(pool, early)).toBe("attempts_default");

    const created = await ensureAttemptPartitions(pool, DAILY, 30 * DAY);
    const today = Date.now() - (Date.now() % DAY);
    // today and two days ahead (and a third when two days from now is past midnight's start)
    expect(created.slice(0, 3)).toEqual(
      [0, 1, 2].map((d) => partitionName(today + d * DAY, "day")),
    );
    expect(await partitionOf(pool, early)).toBe(partitionName(today, "day"));
    const later = await attemptNow(pool);
    expect(await partitionOf(pool, later)).toBe(partitionName(today, "day"));
    expect((await pool.query("select count(*)::int as n from attempts_default")).rows[0].n).toBe(0);
    // a second run creates nothing
    expect(await ensureAttemptPartitions(pool, DAILY, 30 * DAY)).toEqual([]);
  });

  test("rows written while maintenance was away are moved into the partitions made for them, within retention", async () => {
    const pool = db.pool;
    // 5 days ago, 10 days ago and 40 days ago: no partition of theirs exists yet
    const fiveDays = await attemptAt(pool, Date.now() - 5 * DAY);
    const tenDays = await attemptAt(pool, Date.now() - 10 * DAY);
    const fortyDays = await attemptAt(pool, Date.now() - 40 * DAY);
    for (const id of [fiveDays, tenDays, fortyDays])
      expect(await partitionOf(pool, id)).toBe("attempts_default");
    const created = await ensureAttemptPartitions(pool, DAILY, 30 * DAY);
    // the two days that have rows waiting; nothing for a row past the 30-day retention
    expect(created).toEqual([dayOf(Date.now() - 10 * DAY), dayOf(Date.now() - 5 * DAY)]);
    expect(await partitionOf(pool, fiveDays)).toBe(dayOf(Date.now() - 5 * DAY));
    expect(await partitionOf(pool, tenDays)).toBe(created[0]);
    expect(await partitionOf(pool, fortyDays)).toBe("attempts_default");
  });

  test("changing the interval to hours adds hourly partitions only where no daily one covers", async () => {
    const pool = db.pool;
    const before = await listAttemptPartitions(pool);
    const created = await ensureAttemptPartitions(
      pool,
      { interval: "hour", aheadMs: 4 * DAY },
      30 * DAY,
    );
    // days 3 and 4 ahead were not covered: 24 or more hourly partitions (no overlaps: attach refuses them)
    expect(created.length).toBeGreaterThanOrEqual(24);
    expect(
      created.every((n) => /^attempts_p\d{10}$/.test(n)),
      created.join(),
    ).toBe(true);
    const after = await listAttemptPartitions(pool);
    expect(after.length).toBe(before.length + created.length);
    for (let i = 1; i < after.length; i++)
      expect(after[i]!.lo).toBeGreaterThanOrEqual(after[i - 1]!.hi);
  });
});

describe("retention drops whole partitions", () => {
  let db: TestDb;
  beforeAll(async () => {
    db = await createTestDb();
  });
  afterAll(() => db?.drop());

  test("partitions wholly past the age go; the partition straddling it, younger ones, the legacy rows, pending and dead-letter deliveries stay", async () => {
    const pool = db.pool;
    const now = Date.now();
    // partitions for the last 12 days (as if the installation had run that long)
    await history(pool, 12);
    const ids: Record<string, number> = {};
    for (const d of [11, 10.5, 9, 5, 1]) ids[`d${d}`] = await attemptAt(pool, now - d * DAY);
    // a dead letter and a pending delivery of a message 11 days old: not attempts, never dropped
    await pool.query(`
      insert into applications (id, name) values ('app_h', 'h');
      insert into endpoints (id, app_id, url) values ('ep_h', 'app_h', 'http://127.0.0.1:9/x');
      insert into messages (id, app_id, event_type, payload, created_at) values ('msg_h', 'app_h', 't', '{}', now() - interval '11 days');
      insert into endpoints (id, app_id, url) values ('ep_h2', 'app_h', 'http://127.0.0.1:9/y');
      insert into deliveries (message_id, endpoint_id, app_id, status, max_attempts, created_at, updated_at)
      values ('msg_h', 'ep_h', 'app_h', 'dead_letter', 5, now() - interval '11 days', now() - interval '1 day'),
             ('msg_h', 'ep_h2', 'app_h', 'pending', 5, now() - interval '11 days', now() - interval '11 days');`);

    const retention: RetentionConfig = {
      payloadMs: 30 * DAY,
      attemptsMs: 10 * DAY,
      deadLetterMs: 30 * DAY,
      batch: 100,
    };
    const partitionsBefore = await listAttemptPartitions(pool);
    const result = await purgeExpiredUntil(pool, retention, Number.POSITIVE_INFINITY);
    // the partitions of days 12 and 11 ago lie wholly before the 10-day cutoff; the one
    // holding the cutoff does not, so the attempt 10.5 days old waits for it
    const cutoffDay = now - 10 * DAY - ((now - 10 * DAY) % DAY);
    const expectDropped = partitionsBefore
      .filter((p) => p.lo >= LEGACY_ATTEMPT_ID_END && p.hi <= attemptIdAt(cutoffDay))
      .map((p) => p.name);
    expect(expectDropped.length).toBeGreaterThanOrEqual(2);
    expect(result.droppedPartitions.map((p) => p.name)).toEqual(expectDropped);
    // no row of the dropped partitions was deleted one by one
    expect(result.deleted.attempts).toBe(0);
    const left = (await pool.query("select id from attempts order by id")).rows.map((r) =>
      Number(r.id),
    );
    expect(left).toEqual(
      [ids["d10.5"], ids.d9, ids.d5, ids.d1].filter((id) => (id ?? 0) >= attemptIdAt(cutoffDay)),
    );
    expect(left).not.toContain(ids.d11);
    const { rows } = await pool.query(
      "select status from deliveries where message_id = 'msg_h' order by status",
    );
    expect(rows.map((r) => r.status)).toEqual(["dead_letter", "pending"]);
    // a second run drops nothing
    expect(
      (await purgeExpiredUntil(pool, retention, Number.POSITIVE_INFINITY)).droppedPartitions,
    ).toEqual([]);
  });

  test("a period detached by a run that stopped before dropping it is dropped by the next", async () => {
    const pool = db.pool;
    const [oldest] = (await listAttemptPartitions(pool)).filter(
      (p) => p.lo >= LEGACY_ATTEMPT_ID_END,
    );
    await pool.query(`alter table attempts detach partition ${oldest!.name}`);
    const retention: RetentionConfig = {
      payloadMs: 30 * DAY,
      attemptsMs: 30 * DAY,
      deadLetterMs: 30 * DAY,
      batch: 100,
    };
    const result = await purgeExpiredUntil(pool, retention, Number.POSITIVE_INFINITY);
    expect(result.droppedPartitions).toEqual([{ name: oldest!.name, rows: null }]);
    expect((await pool.query("select to_regclass($1) as t", [oldest!.name])).rows[0].t).toBeNull();
  });

  test("lowering the retention at run time drops more at the next run", async () => {
    const pool = db.pool;
    const retention: RetentionConfig = {
      payloadMs: 30 * DAY,
      attemptsMs: 3 * DAY,
      deadLetterMs: 30 * DAY,
      batch: 100,
    };
    const result = await purgeExpiredUntil(pool, retention, Number.POSITIVE_INFINITY);
    expect(result.droppedPartitions.length).toBeGreaterThanOrEqual(6);
    const { rows } = await pool.query("select min(id) as oldest from attempts");
    expect(Number(rows[0].oldest)).toBeGreaterThanOrEqual(attemptIdAt(Date.now() - 4 * DAY));
  });
});

describe("time bounds prune partitions", () => {
  let db: TestDb;
  beforeAll(async () => {
    db = await createTestDb();
    await history(db.pool, 10);
    await db.pool.query("analyze attempts");
  });
  afterAll(() => db?.drop());

  test("a bound on created_at said as an id bound reads the partitions since then, the legacy one and the default one only", async () => {
    const since = new Date(Date.now() - HOUR);
    const { rows } = await db.pool.query(
      `explain (costs off) select count(*) from attempts a
       where a.created_at >= $1::timestamptz and ${attemptsSinceSql("a", "$1::timestamptz")}`,
      [since],
    );
    const plan = rows.map((r) => r["QUERY PLAN"]).join("\n");
    const scanned = [...new Set(plan.match(/attempts_\w+/g))].filter(
      (n) => !n.endsWith("_idx") && !n.endsWith("_brin") && !n.endsWith("_pkey"),
    );
    const today = dayOf(Date.now());
    expect(scanned).toContain(today);
    expect(scanned).toContain("attempts_legacy");
    // none of the 10 days' partitions before the bound's (yesterday's is the bound's own in
    // the first hour of a day)
    for (let d = 1; d <= 10; d++) {
      const old = dayOf(since.getTime() - d * DAY);
      expect(scanned, plan).not.toContain(old);
    }
  });

  test("a message's attempt list reads the partitions since its message was made, not the older days", async () => {
    // the statement listAttempts sends, captured, then explained with its values
    let sent: { text: string; values: unknown[] } | null = null;
    const recorder = {
      query: async (text: string, values: unknown[]) => {
        sent = { text, values };
        return { rows: [] };
      },
    } as unknown as Queryable;
    // noon two days ago: its hour of clock skew stays in that day at any time of this one
    const twoDaysAgo = Date.now() - 2 * DAY;
    const made = twoDaysAgo - (twoDaysAgo % DAY) + 12 * HOUR;
    const messageId = messageIdAt(made);
    await listAttempts(
      recorder,
      { messageId, endpointId: null, outcome: null },
      { cursor: null, op: "<", direction: "desc", limit: 51 },
    );
    const statement = sent as unknown as { text: string; values: unknown[] };
    const { rows } = await db.pool.query(`explain (costs off) ${statement.text}`, statement.values);
    const plan = rows.map((r) => r["QUERY PLAN"]).join("\n");
    // noon two days ago less an hour of clock skew: never a day before that one
    for (let d = 3; d <= 10; d++) expect(plan, plan).not.toContain(dayOf(Date.now() - d * DAY));
    // the walk's last statement (the one captured) reads from the message's day on
    expect(plan).toContain(dayOf(made));
  });

  test("an attempt's id default runs inline (no SQL function call per row), and hookrelay_attempt_id_at agrees with attemptIdAt in any time zone", async () => {
    const { rows } = await db.pool.query(
      `explain (verbose, costs off)
       insert into attempts (delivery_id, message_id, endpoint_id, app_id, attempt_number, trigger,
                             url, started_at, latency_ms, outcome)
       values (0, 'msg_h', 'ep_h', 'app_h', 1, 'scheduled', 'http://x', now(), 5, 'success')`,
    );
    const plan = rows.map((r) => r["QUERY PLAN"]).join("\n");
    expect(plan).toContain("nextval('attempts_id_seq'");
    expect(plan).not.toContain("hookrelay_attempt_id_at");
    const at = [
      Date.UTC(2026, 11, 6, 13, 59, 59, 999),
      Date.UTC(2024, 0, 1),
      Date.UTC(2031, 5, 30, 23, 0, 0, 1),
    ];
    for (const zone of ["UTC", "Asia/Kathmandu", "America/St_Johns"]) {
      const c = await db.pool.connect();
      try {
        await c.query(`set time zone '${zone}'`);
        const got = await c.query(
          "select hookrelay_attempt_id_at(t)::text as id from unnest($1::timestamptz[]) with ordinality u(t, n) order by n",
          [at.map((ms) => new Date(ms))],
        );
        expect(got.rows.map((r) => Number(r.id))).toEqual(at.map(attemptIdAt));
      } finally {
        await c.query("reset time zone");
        c.release();
      }
    }
  });

  test("a lookup by id reads one partition", async () => {
    const id = await attemptNow(db.pool);
    const { rows } = await db.pool.query(
      `explain (costs off) select * from attempts where id = ${id}`,
    );
    const plan = rows.map((r) => r["QUERY PLAN"]).join("\n");
    expect(plan.match(/on attempts_p\d+/g), plan).toHaveLength(1);
  });
});

describe("the migration runner's no-transaction steps", () => {
  let db: TestDb;
  let dir: string;
  beforeAll(async () => {
    db = await createTestDb({ template: false });
    dir = await mkdtemp(path.join(tmpdir(), "hookrelay-migrations-"));
  });
  afterAll(async () => {
    await db?.drop();
    await rm(dir, { recursive: true, force: true });
  });

  test("a -- hookrelay:no-transaction file runs outside a transaction (create index concurrently), once", async () => {
    await writeFile(
      path.join(dir, "0001_t.sql"),
      "create table t (a int);\ninsert into t select generate_series(1, 100);\n",
    );
    await writeFile(
      path.join(dir, "0002_t_idx.sql"),
      "-- hookrelay:no-transaction\n-- built without blocking writes\ncreate index concurrently if not exists t_a_idx on t (a);\n",
    );
    // without the header, the same statement fails inside the migration's transaction
    await writeFile(
      path.join(dir, "0003_t_idx2.sql"),
      "create index concurrently t_a2_idx on t (a);\n",
    );
    await expect(migrate(db.pool, { migrationsDir: dir })).rejects.toThrow(
      /0003_t_idx2.sql failed/,
    );
    const { rows } = await db.pool.query("select name from hookrelay_migrations order by id");
    expect(rows.map((r) => r.name)).toEqual(["0001_t.sql", "0002_t_idx.sql"]);
    const idx = await db.pool.query(
      "select i.indisvalid from pg_index i where i.indexrelid = to_regclass('t_a_idx')",
    );
    expect(idx.rows).toEqual([{ indisvalid: true }]);
    await rm(path.join(dir, "0003_t_idx2.sql"));
    expect(await migrate(db.pool, { migrationsDir: dir })).toEqual([]);
  });

  test("through a transaction pooler (sessionless), each step runs in a transaction of its own; a step that cannot is refused with the fix", async () => {
    await writeFile(
      path.join(dir, "0005_check.sql"),
      "-- hookrelay:no-transaction\nalter table t add constraint t_a_positive check (a > 0) not valid;\nalter table t validate constraint t_a_positive;\n",
    );
    expect(await migrate(db.pool, { migrationsDir: dir, sessionless: true })).toEqual([
      "0005_check.sql",
    ]);
    await writeFile(
      path.join(dir, "0006_idx.sql"),
      "-- hookrelay:no-transaction\ncreate index concurrently if not exists t_a3_idx on t (a);\n",
    );
    await expect(migrate(db.pool, { migrationsDir: dir, sessionless: true })).rejects.toThrow(
      /0006_idx.sql has a step PostgreSQL runs only outside a transaction, which a transaction pooler cannot give: migrate through a direct connection/,
    );
    // on a session of its own it goes
    expect(await migrate(db.pool, { migrationsDir: dir })).toEqual(["0006_idx.sql"]);
  });

  test("a no-transaction step that fails is not recorded, and runs again from its start", async () => {
    await writeFile(
      path.join(dir, "0004_steps.sql"),
      "-- hookrelay:no-transaction\ncreate table if not exists u (a int);\nselect 1 / (select count(*) from u)::int;\n",
    );
    await expect(migrate(db.pool, { migrationsDir: dir })).rejects.toThrow(/0004_steps.sql failed/);
    await db.pool.query("insert into u values (1)");
    expect(await migrate(db.pool, { migrationsDir: dir })).toEqual(["0004_steps.sql"]);
  });
});
