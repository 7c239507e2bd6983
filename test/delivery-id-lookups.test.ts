/**
 * Lookups of a delivery by its id alone read the periods its id's block holds, once the
 * maintenance task `delivery-id-blocks` has summarized that block (migration 0039,
 * src/ops/delivery-id-blocks.ts, docs/history.md): the statements the API sends, explained
 * with their values in a custom plan and in a generic one, and the answers they give
 * before and after a block is summarized, for a delivery written long after its message
 * too (a resend or a replay).
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { Pool, Queryable } from "../src/db/pool.ts";
import { deliveryStatus } from "../src/db/queries/deliveries.ts";
import { partitionName } from "../src/ops/attempt-partitions.ts";
import { cancelDelivery, requeueDeliveries } from "../src/ops/dead-letters.ts";
import { summarizeDeliveryIdBlocks } from "../src/ops/delivery-id-blocks.ts";
import { ensureMessagePartitions } from "../src/ops/message-partitions.ts";
import { retryFailedHead, skipHead } from "../src/ops/ordering-keys.ts";
import { createTestDb, type TestDb } from "./helpers/db.ts";

const DAY = 86_400_000;
const BLOCK = 65_536;
const dayStart = (ms: number) => ms - (ms % DAY);
const dayOf = (ms: number) => partitionName(dayStart(ms), "day", "deliveries");

/**
 * The statements `call` sends, captured instead of run; the read of the id's block
 * (byDeliveryId) is run, its range given to the next.
 */
async function statementsOf(
  call: (db: Queryable) => Promise<unknown>,
): Promise<Array<{ text: string; values: unknown[] }>> {
  const sent: Array<{ text: string; values: unknown[] }> = [];
  const recorder = {
    query: async (text: string | { text: string; values: unknown[] }, values: unknown[]) => {
      const s = typeof text === "string" ? { text, values } : text;
      if (/^\s*select b\.min_ms/.test(s.text)) return db.pool.query(s.text, s.values);
      sent.push(s);
      return { rows: [{ n: 0 }], rowCount: 0 };
    },
  } as unknown as Queryable;
  await call(recorder);
  return sent;
}

/** The partitions of deliveries a statement reads, custom and generic plans (rolled back). */
async function partitionsRead(pool: Pool, text: string, values: unknown[]): Promise<string[]> {
  const client = await pool.connect();
  try {
    const lines: string[] = [];
    for (const mode of ["force_custom_plan", "force_generic_plan"]) {
      await client.query("begin");
      try {
        await client.query(`set local plan_cache_mode = ${mode}`);
        const { rows } = await client.query(
          `explain (analyze, costs off, timing off, summary off) ${text}`,
          values,
        );
        lines.push(...rows.map((r) => r["QUERY PLAN"] as string));
      } finally {
        await client.query("rollback");
      }
    }
    const read = lines
      // an UPDATE names every partition it may write ("Update on ..."); those it reads are
      // its Append's members that ran
      .filter((l) => !l.includes("never executed") && !/^\s*(Update|Delete) on /.test(l))
      .join("\n")
      .match(/\bdeliveries_(p\d+|default|legacy)(?!\w)/g);
    return [...new Set(read ?? [])];
  } finally {
    client.release();
  }
}

let db: TestDb;
const now = Date.now();
const old = now - 5 * DAY;

/** A message at `ms` with one delivery, the delivery's id the sequence's next after `after`. */
async function deliveryAt(ms: number, tag: string, after: number): Promise<number> {
  const pool = db.pool;
  await pool.query("select setval('delivery_ids', $1::bigint)", [after]);
  await pool.query(
    `insert into messages (id, app_id, event_type, payload, message_ms)
     values ($1, 'app_b', 'e', '{}', $2::bigint) on conflict do nothing`,
    [`msg_${tag}`, ms],
  );
  const { rows } = await pool.query(
    `insert into deliveries (message_id, endpoint_id, app_id, max_attempts, status, message_ms,
                             ordering_key)
     values ($1, 'ep_b', 'app_b', 5, 'failed', $2::bigint, $3) returning id`,
    [`msg_${tag}`, ms, tag],
  );
  return Number(rows[0].id);
}

let oldId: number;
let todayId: number;
let resentId: number;
beforeAll(async () => {
  db = await createTestDb();
  await ensureMessagePartitions(
    db.pool,
    { interval: "day", aheadMs: 12 * DAY },
    12 * DAY,
    now - 10 * DAY,
  );
  await db.pool.query(`
    insert into applications (id, name) values ('app_b', 'b');
    insert into endpoints (id, app_id, url) values ('ep_b', 'app_b', 'http://127.0.0.1:9/b');`);
  // block 1: a delivery of five days ago; block 2: today's; block 3: the old message's
  // delivery written today (a resend), its block spanning both days
  oldId = await deliveryAt(old, "old", BLOCK);
  todayId = await deliveryAt(now, "today", 2 * BLOCK);
  resentId = await deliveryAt(old, "old-resent", 3 * BLOCK);
  await db.pool.query("select setval('delivery_ids', $1::bigint)", [4 * BLOCK + 5]);
  await db.pool.query("analyze deliveries");
});
afterAll(() => db?.drop());

describe("delivery-id-blocks", () => {
  test("summarizes whole blocks once no transaction open since the mark is left", async () => {
    const pool = db.pool;
    // a transaction open before the mark holds the blocks back
    const open = await pool.connect();
    try {
      await open.query("begin");
      await open.query("select 1");
      expect((await summarizeDeliveryIdBlocks(pool)).doneBelow).toBe(0); // marks
      expect((await summarizeDeliveryIdBlocks(pool)).doneBelow).toBe(0); // not settled
      await open.query("commit");
    } finally {
      open.release();
    }
    const run = await summarizeDeliveryIdBlocks(pool);
    // the blocks below the marked value's own (block 4)
    expect(run.doneBelow).toBe(4);
    const { rows } = await pool.query(
      "select block::int, min_ms::float8 as lo, max_ms::float8 as hi from delivery_id_blocks order by block",
    );
    expect(rows).toEqual([
      { block: 1, lo: old, hi: old },
      { block: 2, lo: now, hi: now },
      { block: 3, lo: old, hi: old },
    ]);
  });

  test.each([
    [
      "deliveryStatus (POST /deliveries/{id}/cancel's check)",
      (q: Queryable, id: number) => deliveryStatus(q, id, null),
    ],
    ["the cancel", (q: Queryable, id: number) => cancelDelivery(q, id, null)],
    ["an ordering key's retry", (q: Queryable, id: number) => retryFailedHead(q, id)],
    ["an ordering key's skip", (q: Queryable, id: number) => skipHead(q, id)],
    [
      "a dead letter's requeue",
      (q: Queryable, id: number) => requeueDeliveries(q, { deliveryId: id }, "t", 5),
    ],
  ])("%s reads only the period of its id's block", async (_, call) => {
    for (const [id, ms] of [
      [todayId, now],
      [oldId, old],
      [resentId, old],
    ] as const) {
      const statements = await statementsOf((q) => call(q, id));
      expect(statements.length).toBeGreaterThan(0);
      for (const { text, values } of statements) {
        const read = await partitionsRead(db.pool, text, values);
        expect(read, text).toEqual([dayOf(ms)]);
      }
    }
  });

  test("an id past the summarized blocks reads from the newest block's least message_ms on, then every period", async () => {
    // (the cancel: the captured statements answer no row, so it reads again)
    const statements = await statementsOf((q) => cancelDelivery(q, 4 * BLOCK + 1, null));
    expect(statements.length).toBe(2);
    const first = await partitionsRead(db.pool, statements[0]!.text, statements[0]!.values);
    for (let d = 1; d <= 5; d++) expect(first).not.toContain(dayOf(old - d * DAY));
    expect(first).toContain(dayOf(now));
    const second = await partitionsRead(db.pool, statements[1]!.text, statements[1]!.values);
    expect(second).toContain(dayOf(old - 3 * DAY));
  });

  test("finds each delivery, summarized or not", async () => {
    const pool = db.pool;
    for (const id of [oldId, todayId, resentId]) {
      expect(await deliveryStatus(pool, id, null)).toBe("failed");
    }
    // block 4 is not summarized: its delivery of the old message is found from the newest
    // block's least message_ms on, one of an older message by every period
    const fresh = await deliveryAt(old, "fresh", 4 * BLOCK + 10);
    const older = await deliveryAt(old - 3 * DAY, "older", 4 * BLOCK + 20);
    expect(await deliveryStatus(pool, older, null)).toBe("failed");
    expect(await cancelDelivery(pool, older, null)).toBe(true);
    expect(await deliveryStatus(pool, fresh, null)).toBe("failed");
    expect(await retryFailedHead(pool, fresh)).toBe(true);
    expect(await skipHead(pool, fresh)).toBe(true);
    expect(await deliveryStatus(pool, fresh, null)).toBe("canceled");
    // a summarized block's delivery through each writer
    expect(await retryFailedHead(pool, resentId)).toBe(true);
    expect(await cancelDelivery(pool, resentId, null)).toBe(true);
    expect(await deliveryStatus(pool, resentId, null)).toBe("canceled");
  });
});
