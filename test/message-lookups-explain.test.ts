/**
 * Lookups by message id read the partitions that can hold the message (its period, or the
 * default partition where none covers it, and the legacy one), never every day's
 * (docs/history.md, "Messages and deliveries"; src/db/sql/message-ms.ts): the statements
 * the API sends, explained with their values, in a custom plan and in a generic one.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { Pool, Queryable } from "../src/db/pool.ts";
import { listMessageDeliveries, resendDelivery } from "../src/db/queries/deliveries.ts";
import { deliveryCountsOf } from "../src/db/queries/message-delivery-counts.ts";
import { expungeMessage } from "../src/db/queries/message-expunge.ts";
import { findMessage, getMessage } from "../src/db/queries/messages.ts";
import { partitionName } from "../src/ops/attempt-partitions.ts";
import { ensureMessagePartitions } from "../src/ops/message-partitions.ts";
import { writeMessages } from "../src/queue/enqueue-message.ts";
import { createTestDb, type TestDb } from "./helpers/db.ts";

const DAY = 86_400_000;
const dayOf = (ms: number, table: "messages" | "deliveries") =>
  partitionName(ms - (ms % DAY), "day", table);

/** The statements `call` sends, captured instead of run. */
async function statementsOf(
  call: (db: Queryable) => Promise<unknown>,
): Promise<Array<{ text: string; values: unknown[] }>> {
  const sent: Array<{ text: string; values: unknown[] }> = [];
  const recorder = {
    query: async (text: string, values: unknown[]) => {
      sent.push({ text, values });
      return { rows: [], rowCount: 0 };
    },
  } as unknown as Queryable;
  await call(recorder);
  return sent;
}

/**
 * The partitions of messages and deliveries a statement reads, run (in a transaction rolled
 * back) with a custom plan and with a generic one: those its plan leaves out, and those
 * pruned as it runs ("never executed": a bound known only then), are not read.
 */
async function partitionsRead(pool: Pool, text: string, values: unknown[]): Promise<string[]> {
  const client = await pool.connect();
  try {
    const lines: string[] = [];
    for (const mode of ["force_custom_plan", "force_generic_plan"]) {
      await client.query("begin");
      await client.query(`set local plan_cache_mode = ${mode}`);
      const { rows } = await client.query(
        `explain (analyze, costs off, timing off, summary off) ${text}`,
        values,
      );
      await client.query("rollback");
      lines.push(...rows.map((r) => r["QUERY PLAN"] as string));
    }
    const read = lines
      .filter((l) => !l.includes("never executed"))
      .join("\n")
      .match(/\b(messages|deliveries)_(p\d+|default|legacy)(?!\w)/g);
    return [...new Set(read ?? [])];
  } finally {
    client.release();
  }
}

let db: TestDb;
let messageId: string;
beforeAll(async () => {
  db = await createTestDb();
  const pool = db.pool;
  // ten days of periods, as a running installation has
  await ensureMessagePartitions(
    pool,
    { interval: "day", aheadMs: 12 * DAY },
    12 * DAY,
    Date.now() - 10 * DAY,
  );
  await pool.query(`
    insert into applications (id, name) values ('app_x', 'x');
    insert into endpoints (id, app_id, url) values ('ep_x', 'app_x', 'http://127.0.0.1:9/x');`);
  const [one] = (await writeMessages(
    pool,
    [{ appId: "app_x", eventType: "e", payload: "{}", eventId: "ev-x" }],
    5,
  )) as Array<{ messageId: string }>;
  messageId = one!.messageId;
  await pool.query("analyze messages; analyze deliveries");
});
afterAll(() => db?.drop());

describe("lookups by message id", () => {
  const older = (table: "messages" | "deliveries") =>
    Array.from({ length: 9 }, (_, i) => dayOf(Date.now() - (i + 1) * DAY, table));

  test.each([
    ["a message by id (GET /msg/{id})", (q: Queryable) => getMessage(q, messageId)],
    ["an app's message by id", (q: Queryable) => findMessage(q, "app_x", messageId)],
    ["an app's message by eventId", (q: Queryable) => findMessage(q, "app_x", "ev-x")],
    [
      "a message's deliveries (its endpoints' states)",
      (q: Queryable) =>
        listMessageDeliveries(q, messageId, { cursor: null, op: ">", direction: "asc", limit: 50 }),
    ],
    [
      "the delivery counts of a page of messages",
      (q: Queryable) => deliveryCountsOf(q, [messageId]),
    ],
    ["a resend", (q: Queryable) => resendDelivery(q, messageId, "ep_x", 5)],
    ["an expunge", (q: Queryable) => expungeMessage(q, "app_x", messageId)],
  ])("%s reads its day and the legacy partition, not the other days", async (_, call) => {
    const statements = await statementsOf(call);
    expect(statements.length).toBeGreaterThan(0);
    for (const { text, values } of statements) {
      const read = await partitionsRead(db.pool, text, values);
      const today = read.filter((p) => p.endsWith(dayOf(Date.now(), "messages").slice(-9)));
      expect(today.length, read.join()).toBeGreaterThan(0);
      for (const old of [...older("messages"), ...older("deliveries")])
        expect(read, text).not.toContain(old);
      expect(read, text).not.toContain("messages_default");
    }
  });

  test("a message no period covers is looked up in the default partition (and the legacy one)", async () => {
    // an id of 1988 (its leading digits are its millisecond): no period covers it
    const old = `msg_01${"0".repeat(20)}`;
    const statements = await statementsOf((q) => getMessage(q, old));
    const read = await partitionsRead(db.pool, statements[0]!.text, statements[0]!.values);
    expect(read.sort()).toEqual(["messages_default", "messages_legacy"]);
  });
});
