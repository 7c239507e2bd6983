/**
 * Retention deletes the rows of delivery_id_blocks whose deliveries are all gone (their
 * greatest message_ms older than the oldest period kept, none of their ids in the default
 * partition), after its drops; it keeps the blocks of rows still stored: a newer period's,
 * a dropped period's backlog in the default partition, the legacy partition's
 * (src/ops/delivery-id-blocks.ts, docs/history.md, "Lookups of a delivery by id").
 */
import { afterAll, beforeAll, expect, test } from "vitest";
import { ensureMessagePartitions } from "../src/ops/message-partitions.ts";
import { purgeExpired } from "../src/ops/retention.ts";
import { createTestDb, type TestDb } from "./helpers/db.ts";

const DAY = 86_400_000;
let db: TestDb;
beforeAll(async () => {
  db = await createTestDb();
  // ten days of periods and two ahead
  await ensureMessagePartitions(
    db.pool,
    { interval: "day", aheadMs: 12 * DAY },
    12 * DAY,
    Date.now() - 10 * DAY,
  );
});
afterAll(() => db?.drop());

test("retention deletes the blocks of deliveries no longer stored, and only those", async () => {
  const pool = db.pool;
  const ago = (days: number) => Date.now() - days * DAY;
  await pool.query(
    `insert into applications (id, name) values ('app_b', 'b');
     insert into endpoints (id, app_id, url) values ('ep_b', 'app_b', 'http://127.0.0.1:9/b');`,
  );
  // a dead letter of 9 days ago, held at the drop of its period (dead-letter age 30 days)
  await pool.query(
    `insert into messages (id, app_id, event_type, payload, message_ms)
     values ('msg_held', 'app_b', 'e', '{}', $1::bigint)`,
    [ago(9)],
  );
  await pool.query(
    `insert into deliveries (id, message_id, endpoint_id, app_id, status, max_attempts, message_ms)
     values (4 * 65536, 'msg_held', 'ep_b', 'app_b', 'dead_letter', 5, $1::bigint)`,
    [ago(9)],
  );
  await pool.query(
    `insert into delivery_id_blocks (block, min_ms, max_ms) values
       (1, $1::bigint, $1::bigint),  -- 8 days ago: its period is dropped below
       (2, $1::bigint, $2::bigint),  -- 8 days ago to 2 days ago: a kept period holds some
       (3, 0, 0),                    -- legacy rows
       (4, $3::bigint, $3::bigint)   -- the held dead letter's`,
    [ago(8), ago(2), ago(9)],
  );
  const { rows: before } = await pool.query("select count(*)::int as n from deliveries_default");
  expect(before[0].n).toBe(0);
  await purgeExpired(pool, {
    payloadMs: 5 * DAY,
    attemptsMs: 30 * DAY,
    deadLetterMs: 30 * DAY,
    batch: 1000,
  });
  // the dead letter outlived its period, in the default partition
  const { rows: held } = await pool.query(
    "select message_id from deliveries_default where id = 4 * 65536",
  );
  expect(held.map((r) => r.message_id)).toEqual(["msg_held"]);
  const { rows } = await pool.query("select block from delivery_id_blocks order by block");
  expect(rows.map((r) => Number(r.block))).toEqual([2, 3, 4]);
  // (an older row held in the default partition keeps only its own block)

  // once the held row is gone too, its block goes at the next run
  await pool.query("delete from deliveries where id = 4 * 65536");
  await purgeExpired(pool, {
    payloadMs: 5 * DAY,
    attemptsMs: 30 * DAY,
    deadLetterMs: 30 * DAY,
    batch: 1000,
  });
  const { rows: after } = await pool.query("select block from delivery_id_blocks order by block");
  expect(after.map((r) => Number(r.block))).toEqual([2, 3]);
});
