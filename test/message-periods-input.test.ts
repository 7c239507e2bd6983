/**
 * Bad input for the periods of messages and deliveries (docs/history.md, "Bad input"): a
 * payload retention shorter than a partition, the retention and the interval changed at
 * run time, a clock that jumped forward or back; each handled as the table says.
 */

import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { RetentionConfig } from "../src/config.ts";
import type { Pool } from "../src/db/pool.ts";
import { listPartitions, partitionName, partitionNotes } from "../src/ops/attempt-partitions.ts";
import { ensureMessagePartitions } from "../src/ops/message-partitions.ts";
import { purgeExpiredUntil } from "../src/ops/retention.ts";
import { createTestDb, type TestDb } from "./helpers/db.ts";
import { messageIdAt as idAt } from "./helpers/message-ids.ts";

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
let serial = 0n;

/** A message id carrying `ms`, as an API process whose clock says `ms` makes it. */
function messageIdAt(ms: number): string {
  serial += 1n;
  return idAt(ms, serial);
}

/** A delivered message whose id says `ms` (the API's clock), written now (the database's). */
async function deliveredAt(pool: Pool, ms: number): Promise<string> {
  const id = messageIdAt(ms);
  await pool.query(
    `insert into messages (id, app_id, event_type, payload, message_ms)
     values ($1, 'app_i', 'e', '{}', hookrelay_message_ms($1));
     `,
    [id],
  );
  await pool.query(
    `insert into deliveries (message_id, endpoint_id, app_id, status, max_attempts, message_ms)
     values ($1, 'ep_i', 'app_i', 'delivered', 5, hookrelay_message_ms($1))`,
    [id],
  );
  return id;
}

const placeOf = async (pool: Pool, id: string) =>
  (
    await pool.query(
      `select tableoid::regclass::text as p from messages where id = $1
       union all
       select tableoid::regclass::text from deliveries where message_id = $1`,
      [id],
    )
  ).rows.map((r) => r.p as string);

const day = (ms: number, t: "messages" | "deliveries" = "messages") =>
  partitionName(ms - (ms % DAY), "day", t);

test("a payload retention shorter than a partition is accepted with a note at start", () => {
  const notes = partitionNotes({
    retention: { attemptsMs: 30 * DAY, payloadMs: 6 * HOUR } as RetentionConfig,
    partitions: { interval: "day", aheadMs: 2 * DAY },
  });
  expect(notes).toEqual([
    expect.stringMatching(
      /HOOKRELAY_RETENTION_PAYLOAD_MS \(6 h\) is shorter than one partition of messages and deliveries \(day\): delivered messages are kept up to 30 h/,
    ),
  ]);
  expect(
    partitionNotes({
      retention: { attemptsMs: 30 * DAY, payloadMs: 6 * HOUR } as RetentionConfig,
      partitions: { interval: "hour", aheadMs: 2 * DAY },
    }),
  ).toEqual([]);
});

describe("periods of messages under bad input", () => {
  let db: TestDb;
  beforeAll(async () => {
    db = await createTestDb();
    await db.pool.query(`
      insert into applications (id, name) values ('app_i', 'i');
      insert into endpoints (id, app_id, url) values ('ep_i', 'app_i', 'http://127.0.0.1:9/i');`);
  });
  afterAll(() => db?.drop());

  test("a clock jumped forward: its rows wait in the default partitions, and the next run makes their period", async () => {
    const pool = db.pool;
    await ensureMessagePartitions(pool, { interval: "day", aheadMs: 2 * DAY }, 30 * DAY);
    const ahead = Date.now() + 5 * DAY;
    const id = await deliveredAt(pool, ahead);
    expect(await placeOf(pool, id)).toEqual(["messages_default", "deliveries_default"]);
    const created = await ensureMessagePartitions(
      pool,
      { interval: "day", aheadMs: 2 * DAY },
      30 * DAY,
    );
    expect(created).toEqual([day(ahead), day(ahead, "deliveries")]);
    expect(await placeOf(pool, id)).toEqual([day(ahead), day(ahead, "deliveries")]);
  });

  test("a clock jumped back past the retention: its rows stay in the default partitions, and go by their age in the database", async () => {
    const pool = db.pool;
    const id = await deliveredAt(pool, Date.now() - 40 * DAY);
    expect(
      await ensureMessagePartitions(pool, { interval: "day", aheadMs: 2 * DAY }, 30 * DAY),
    ).toEqual([]);
    expect(await placeOf(pool, id)).toEqual(["messages_default", "deliveries_default"]);
    const retention: RetentionConfig = {
      payloadMs: 30 * DAY,
      attemptsMs: 30 * DAY,
      deadLetterMs: 30 * DAY,
      batch: 100,
    };
    // written just now by the database's clock: kept
    await purgeExpiredUntil(pool, retention, Number.POSITIVE_INFINITY);
    expect(await placeOf(pool, id)).toHaveLength(2);
    await pool.query("update messages set created_at = now() - interval '31 days' where id = $1", [
      id,
    ]);
    await purgeExpiredUntil(pool, retention, Number.POSITIVE_INFINITY);
    expect(await placeOf(pool, id)).toEqual([]);
  });

  test("hourly after daily: hourly periods only where no daily one covers, for both tables", async () => {
    const pool = db.pool;
    const before = await listPartitions(pool, "messages");
    const created = await ensureMessagePartitions(
      pool,
      { interval: "hour", aheadMs: 4 * DAY },
      30 * DAY,
    );
    // the fourth day ahead was not covered: 24 hours or more, of each table
    expect(created.length).toBeGreaterThanOrEqual(2 * 24);
    expect(created.every((n) => /^(messages|deliveries)_p\d{10}$/.test(n))).toBe(true);
    for (const table of ["messages", "deliveries"] as const) {
      const after = await listPartitions(pool, table);
      for (let i = 1; i < after.length; i++)
        expect(after[i]!.lo).toBeGreaterThanOrEqual(after[i - 1]!.hi);
    }
    expect((await listPartitions(pool, "messages")).length).toBe(
      before.length + created.length / 2,
    );
  });

  test("a payload retention lowered at run time drops more at the next run", async () => {
    const pool = db.pool;
    await ensureMessagePartitions(
      pool,
      { interval: "day", aheadMs: 8 * DAY },
      8 * DAY,
      Date.now() - 6 * DAY,
    );
    const retention = (days: number): RetentionConfig => ({
      payloadMs: days * DAY,
      attemptsMs: 30 * DAY,
      deadLetterMs: 30 * DAY,
      batch: 100,
    });
    const first = await purgeExpiredUntil(pool, retention(30), Number.POSITIVE_INFINITY);
    expect(first.droppedPartitions.filter((p) => p.name.startsWith("messages_"))).toEqual([]);
    const second = await purgeExpiredUntil(pool, retention(3), Number.POSITIVE_INFINITY);
    const dropped = second.droppedPartitions.map((p) => p.name);
    // the days wholly older than three days: at least three of the six
    expect(dropped.filter((n) => n.startsWith("messages_")).length).toBeGreaterThanOrEqual(3);
    expect(dropped).toContain(day(Date.now() - 5 * DAY, "deliveries"));
    expect(dropped).not.toContain(day(Date.now() - 2 * DAY));
  });
});
