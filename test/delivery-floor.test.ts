/**
 * The claim's floor (migration 0038, docs/history.md; src/ops/delivery-floor.ts,
 * src/db/sql/delivery-floor.ts): raised by maintenance to the oldest queued delivery's
 * period, so the claim skips the older periods; lowered by a requeue, a resend or a replay
 * of an older delivery, which the claim then takes.
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { Pool } from "../src/db/pool.ts";
import { resendDelivery } from "../src/db/queries/deliveries.ts";
import { partitionName } from "../src/ops/attempt-partitions.ts";
import { requeueDeliveries } from "../src/ops/dead-letters.ts";
import { raiseDeliveryFloor } from "../src/ops/delivery-floor.ts";
import { ensureMessagePartitions } from "../src/ops/message-partitions.ts";
import { claimDeliveries } from "../src/queue/claim-deliveries.ts";
import { createTestDb, type TestDb } from "./helpers/db.ts";

const DAY = 86_400_000;
const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
let serial = 0n;

function messageIdAt(ms: number): string {
  serial += 1n;
  let v = (BigInt(ms) << 80n) | serial;
  let out = "";
  for (let i = 0; i < 22; i++) {
    out = BASE62[Number(v % 62n)] + out;
    v /= 62n;
  }
  return `msg_${out}`;
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

/** One claim of ep_f's due rows, as a worker's; the ids taken. */
async function claim(pool: Pool): Promise<string[]> {
  const claimed = await claimDeliveries(pool, {
    workerId: "w_floor",
    workerLock: null,
    claimToken: randomUUID(),
    limit: 50,
    defaultMaxInFlight: 100,
    defaultTimeoutMs: 1000,
    leaseMarginMs: 1000,
  });
  return claimed.map((c) => String(c.id));
}

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

  test("the claim reads the periods from the floor up, not the older ones", async () => {
    const pool = db.pool;
    const client = await pool.connect();
    try {
      await client.query("begin");
      await client.query("set local plan_cache_mode = force_generic_plan");
      const { rows } = await client.query(
        `explain (analyze, costs off, timing off, summary off)
         select d.id from deliveries d
         where d.endpoint_id = 'ep_f' and d.queued and d.ordering_key is null
           and (d.message_ms < 1 or d.message_ms >= (select f.ms from delivery_floor f))
         order by d.next_attempt_at limit 10`,
      );
      await client.query("rollback");
      const read = rows
        .map((r) => r["QUERY PLAN"] as string)
        .filter((l) => !l.includes("never executed"))
        .join("\n");
      for (let d = 2; d <= 10; d++)
        expect(read, read).not.toContain(
          partitionName(dayStart(Date.now() - d * DAY), "day", "deliveries"),
        );
      expect(read).toContain(partitionName(dayStart(Date.now()), "day", "deliveries"));
    } finally {
      client.release();
    }
  });

  test("a requeue of an older dead letter lowers the floor, and the claim takes it", async () => {
    const pool = db.pool;
    const floor = await floorOf(pool);
    const dead = await deliveryAt(pool, Date.now() - 5 * DAY, "dead_letter");
    // a claim now would not see a row below the floor: the requeue must lower it
    const n = await requeueDeliveries(pool, { deliveryId: Number(dead) }, "test", 5);
    expect(n).toBe(1);
    expect(await floorOf(pool)).toBeLessThan(floor);
    await pool.query("update deliveries set next_attempt_at = now() where id = $1", [dead]);
    expect(await claim(pool)).toContain(dead);
  });

  test("a resend of an older delivered message lowers the floor, and the claim takes it", async () => {
    const pool = db.pool;
    await pool.query("update deliveries set status = 'delivered'");
    await raiseDeliveryFloor(pool);
    const floor = await floorOf(pool);
    const done = await deliveryAt(pool, Date.now() - 7 * DAY, "delivered");
    const { rows } = await pool.query("select message_id from deliveries where id = $1", [done]);
    expect(await resendDelivery(pool, rows[0].message_id, "ep_f", 5)).toBe(true);
    expect(await floorOf(pool)).toBeLessThan(floor);
    expect(await claim(pool)).toContain(done);
  });
});
