/**
 * The online migration of an existing installation's attempts to the partitioned layout
 * (migrations 0024-0026, docs/history.md, "Migrating"): a database with history in the old
 * layout is migrated while a writer keeps inserting attempts; nothing is lost, the old
 * rows become the legacy partition as they were, new rows carry their time, and retention
 * takes the old rows past their age by batched delete.
 *
 * HOOKRELAY_TEST_HISTORY_ROWS sets the seeded history (default 50,000; 10,000,000 was
 * measured by hand, docs/history.md).
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, expect, test } from "vitest";
import { loadMigrations, migrate } from "../src/db/migrate.ts";
import { LEGACY_ATTEMPT_ID_END } from "../src/db/sql/attempt-ids.ts";
import { ensureAttemptPartitions } from "../src/ops/attempt-partitions.ts";
import { purgeExpired } from "../src/ops/retention.ts";
import { createTestDb, type TestDb } from "./helpers/db.ts";

const ROWS = Number(process.env.HOOKRELAY_TEST_HISTORY_ROWS ?? 50_000);
const DAY = 86_400_000;

let db: TestDb;
let dir: string;
beforeAll(async () => {
  db = await createTestDb({ template: false });
  dir = await mkdtemp(path.join(tmpdir(), "hookrelay-old-layout-"));
  for (const m of (await loadMigrations()).filter((m) => m.id < 24))
    await writeFile(path.join(dir, m.name), m.sql);
});
afterAll(async () => {
  await db?.drop();
  await rm(dir, { recursive: true, force: true });
});

test(`an installation with ${ROWS} attempts migrates while attempts are written, losing none`, async () => {
  const pool = db.pool;
  await migrate(pool, { migrationsDir: dir });
  const seedStart = performance.now();
  // spread over 40 days, in the old layout (sequential ids)
  await pool.query(
    `insert into attempts (delivery_id, message_id, endpoint_id, app_id, attempt_number, trigger, url,
                           started_at, latency_ms, outcome, status_code, created_at)
     select g, 'msg_' || (g % 1000), 'ep_' || (g % 10), 'app_1', 1, 'scheduled', 'http://x',
            now() - (g % 40) * interval '1 day' - interval '1 minute', 10, 'success', 200,
            now() - (g % 40) * interval '1 day' - interval '1 minute'
     from generate_series(1, $1::int) g`,
    [ROWS],
  );
  await pool.query("analyze attempts");
  console.log(`seeded ${ROWS} attempts in ${(performance.now() - seedStart).toFixed(0)} ms`);

  // a writer, as the result writer inserts: the id and created_at from the database
  let writing = true;
  let written = 0;
  let slowestMs = 0;
  const errors: unknown[] = [];
  const writer = (async () => {
    while (writing) {
      const t = performance.now();
      try {
        await pool.query(
          `insert into attempts (delivery_id, message_id, endpoint_id, app_id, attempt_number, trigger,
                                 url, started_at, latency_ms, outcome, status_code)
           values (0, 'msg_live', 'ep_live', 'app_1', 1, 'scheduled', 'http://x', now(), 5, 'success', 200)`,
        );
        written++;
      } catch (err) {
        errors.push(err);
      }
      slowestMs = Math.max(slowestMs, performance.now() - t);
      await new Promise((r) => setTimeout(r, 2));
    }
  })();
  while (written < 20) await new Promise((r) => setTimeout(r, 5));

  const t0 = performance.now();
  const applied = await migrate(pool);
  const migrateMs = performance.now() - t0;
  const before = written;
  while (written < before + 20) await new Promise((r) => setTimeout(r, 5));
  writing = false;
  await writer;
  console.log(
    `migrated ${ROWS} attempts (${applied.join(", ")}) in ${migrateMs.toFixed(0)} ms while ${written} attempts were written; slowest insert ${slowestMs.toFixed(0)} ms`,
  );
  expect(errors).toEqual([]);
  expect(applied).toEqual(
    expect.arrayContaining(["0025_attempts_legacy_range.sql", "0026_attempts_partitioned.sql"]),
  );

  const count = async (sql: string) => (await pool.query(sql)).rows[0].n as number;
  expect(await count("select count(*)::int as n from attempts")).toBe(ROWS + written);
  expect(await count("select count(*)::int as n from attempts where message_id = 'msg_live'")).toBe(
    written,
  );
  // the old rows are the legacy partition, untouched; the new ones carry their time
  const legacy = await count("select count(*)::int as n from attempts_legacy");
  expect(legacy).toBeGreaterThanOrEqual(ROWS);
  expect(
    await count(`select count(*)::int as n from attempts where id >= ${LEGACY_ATTEMPT_ID_END}`),
  ).toBe(ROWS + written - legacy);
  // same columns and collations as before (ids sort as bytes)
  const { rows: cols } = await pool.query(
    `select a.attname, c.collname from pg_attribute a left join pg_collation c on c.oid = a.attcollation
     where a.attrelid = 'attempts'::regclass and a.attname in ('message_id', 'endpoint_id', 'app_id') order by 1`,
  );
  expect(cols.map((c) => c.collname)).toEqual(["C", "C", "C"]);

  // the rows written after the switch wait in the default partition until theirs exists
  await ensureAttemptPartitions(pool, { interval: "day", aheadMs: DAY }, 30 * DAY);
  expect(await count("select count(*)::int as n from attempts_default")).toBe(0);
  expect(await count("select count(*)::int as n from attempts")).toBe(ROWS + written);

  // retention: the old rows past 30 days go by batched delete, the rest stay
  const old = await count(
    "select count(*)::int as n from attempts_legacy where created_at < now() - interval '30 days'",
  );
  const t1 = performance.now();
  const totals = await purgeExpired(pool, {
    payloadMs: 30 * DAY,
    attemptsMs: 30 * DAY,
    deadLetterMs: 30 * DAY,
    batch: 5_000,
  });
  console.log(
    `purged ${totals.attempts} legacy attempts by batched delete in ${(performance.now() - t1).toFixed(0)} ms`,
  );
  expect(totals.attempts).toBe(old);
  expect(await count("select count(*)::int as n from attempts")).toBe(ROWS + written - old);
});
