/**
 * The claim's floor (migration 0038, docs/history.md; src/ops/delivery-floor.ts,
 * src/db/sql/delivery-floor.ts): raised by maintenance to the oldest queued delivery's
 * period; lowered by a requeue, a resend or a replay of an older delivery. (The claim reads
 * it: test/claim-periods.test.ts.)
 */

import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { Pool } from "../src/db/pool.ts";
import { resendDelivery } from "../src/db/queries/deliveries.ts";
import { requeueDeliveries } from "../src/ops/dead-letters.ts";
import { raiseDeliveryFloor } from "../src/ops/delivery-floor.ts";
import { ensureMessagePartitions } from "../src/ops/message-partitions.ts";
import { createTestDb, type TestDb } from "./helpers/db.ts";
import { messageIdAt as idAt } from "./helpers/message-ids.ts";

const DAY = 86_400_000;
let serial = 0n;

function messageIdAt(ms: number): string {
  serial += 1n;
  return idAt(ms, serial);
}

/** A message made at `ms` with one delivery to ep_f in `status`; the delivery's id. */
async function deliveryAt(pool: Pool, ms: number, status: string): Promise<string> {
  const id = messageIdAt(ms);
  await pool.query(
    `insert into messages (id, app_id, event_type, payload, message_ms)
     values ($1, 'app_f', 'e', '{}', hookrelay_message_ms($1))`,
    [id],
  );
  const { rows } = await pool.query(
    `insert into deliveries (message_id, endpoint_id, app_id, status, max_attempts, message_ms,
                             next_attempt_at)
     values ($1, 'ep_f', 'app_f', $2, 5, hookrelay_message_ms($1), now() - interval '1 second')
     returning id`,
    [id, status],
  );
  return String(rows[0].id);
}

const floorOf = async (pool: Pool) =>
  Number((await pool.query("select ms from delivery_floor")).rows[0].ms);

const dayStart = (ms: number) => ms - (ms % DAY);

let db: TestDb;
beforeAll(async () => {
  db = await createTestDb();
  await ensureMessagePartitions(
    db.pool,
    { interval: "day", aheadMs: 12 * DAY },
    12 * DAY,
    Date.now() - 10 * DAY,
  );
  await db.pool.query(`
    insert into applications (id, name) values ('app_f', 'f');
    insert into endpoints (id, app_id, url, adaptive_concurrency)
    values ('ep_f', 'app_f', 'http://127.0.0.1:9/f', 'off');`);
});
afterAll(() => db?.drop());

/** The message_ms of delivery `id`. */
const messageMsOf = async (pool: Pool, id: string) =>
  Number(
    (await pool.query("select message_ms from deliveries where id = $1", [id])).rows[0].message_ms,
  );

describe("the claim's floor", () => {
  test("starts at 0 (every period) and is raised to the oldest queued delivery's period", async () => {
    const pool = db.pool;
    expect(await floorOf(pool)).toBe(0);
    const old = Date.now() - 6 * DAY;
    await deliveryAt(pool, Date.now() - 8 * DAY, "delivered");
    const queued = await deliveryAt(pool, old, "failed");
    expect(await raiseDeliveryFloor(pool)).toBe(dayStart(old));
    expect(await floorOf(pool)).toBe(dayStart(old));
    // once that one is done, the floor goes up to an hour before now
    await pool.query("update deliveries set status = 'delivered' where id = $1", [queued]);
    const raised = await raiseDeliveryFloor(pool);
    expect(raised).toBeGreaterThan(Date.now() - 2 * 3_600_000);
    expect(raised).toBeLessThan(Date.now());
  });

  test("a requeue of an older dead letter lowers the floor to it", async () => {
    const pool = db.pool;
    const floor = await floorOf(pool);
    const dead = await deliveryAt(pool, Date.now() - 5 * DAY, "dead_letter");
    // a claim bounded by the floor would not see a row below it: the requeue lowers it
    const n = await requeueDeliveries(pool, { deliveryId: Number(dead) }, "test", 5);
    expect(n).toBe(1);
    expect(await floorOf(pool)).toBeLessThan(floor);
    expect(await floorOf(pool)).toBe(await messageMsOf(pool, dead));
  });

  test("a resend of an older delivered message lowers the floor to it", async () => {
    const pool = db.pool;
    await pool.query("update deliveries set status = 'delivered'");
    await raiseDeliveryFloor(pool);
    const floor = await floorOf(pool);
    const done = await deliveryAt(pool, Date.now() - 7 * DAY, "delivered");
    const { rows } = await pool.query("select message_id from deliveries where id = $1", [done]);
    expect(await resendDelivery(pool, rows[0].message_id, "ep_f", 5)).toBe(true);
    expect(await floorOf(pool)).toBeLessThan(floor);
    expect(await floorOf(pool)).toBe(await messageMsOf(pool, done));
  });
  test("a raise waits for a requeue under way whose row lies above the floor, then keeps the floor below it", async () => {
    const pool = db.pool;
    await pool.query("update deliveries set status = 'delivered'");
    // an older queued row holds the floor at its period
    const older = await deliveryAt(pool, Date.now() - 9 * DAY, "failed");
    expect(await raiseDeliveryFloor(pool)).toBe(dayStart(Date.now() - 9 * DAY));
    const dead = await deliveryAt(pool, Date.now() - 4 * DAY, "dead_letter");
    // the requeue runs in a transaction not committed yet: its row is above the floor, so
    // it does not lower it
    const requeue = await pool.connect();
    const raised: { done: boolean } = { done: false };
    try {
      await requeue.query("begin");
      expect(await requeueDeliveries(requeue, { deliveryId: Number(dead) }, "test", 5)).toBe(1);
      // meanwhile the older row is delivered and maintenance raises the floor: the requeued
      // row is not visible to it yet
      await pool.query("update deliveries set status = 'delivered' where id = $1", [older]);
      const raise = raiseDeliveryFloor(pool).finally(() => {
        raised.done = true;
      });
      // until the raise either finished or waits for the requeue's lock on the floor
      for (let i = 0; i < 200 && !raised.done; i++) {
        const { rows } = await pool.query(
          `select count(*)::int as n from pg_stat_activity
           where datname = current_database() and wait_event_type = 'Lock'
             and query like '%delivery_floor%for update%'`,
        );
        if (rows[0].n > 0) break;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      // (without the requeue's lock the raise is done here, the floor above the row)
      await requeue.query("commit");
      await raise;
    } finally {
      requeue.release();
    }
    expect(await floorOf(pool)).toBeLessThanOrEqual(await messageMsOf(pool, dead));
    expect(await floorOf(pool)).toBe(dayStart(Date.now() - 4 * DAY));
  });
});
