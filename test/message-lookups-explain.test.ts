/**
 * Lookups by message id read the partitions that can hold the message (its period, or the
 * default partition where none covers it, and the legacy one), never every day's
 * (docs/history.md, "Messages and deliveries"; src/db/sql/message-ms.ts): the statements
 * the API sends, explained with their values, in a custom plan and in a generic one.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { lookUpMessages } from "../src/dashboard/sql/message-lookup.ts";
import type { Pool, Queryable } from "../src/db/pool.ts";
import { listMessageDeliveries, resendDelivery } from "../src/db/queries/deliveries.ts";
import { deliveryCountsOf } from "../src/db/queries/message-delivery-counts.ts";
import { expungeMessage } from "../src/db/queries/message-expunge.ts";
import { findMessage, getMessage } from "../src/db/queries/messages.ts";
import { partitionName } from "../src/ops/attempt-partitions.ts";
import { listDeadLetters } from "../src/ops/dead-letters.ts";
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
    query: async (text: string | { text: string; values: unknown[] }, values: unknown[]) => {
      // a query config ({ text, values }) as namedSql gives it, or text and values
      sent.push(typeof text === "string" ? { text, values } : text);
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
    [
      "the dashboard's search by message id, across apps",
      (q: Queryable) => lookUpMessages(q, messageId, null),
    ],
    [
      "the dashboard's search by eventId, across apps",
      (q: Queryable) => lookUpMessages(q, "ev-x", null),
    ],
    [
      "the dashboard's search by eventId, in one app",
      (q: Queryable) => lookUpMessages(q, "ev-x", "app_x"),
    ],
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

describe("the dashboard's search", () => {
  test("finds a message by id and by eventId in every app, a legacy one too", async () => {
    const pool = db.pool;
    await pool.query(`
      insert into applications (id, name) values ('app_y', 'y');
      -- written before the layout by an older hookrelay: message_ms 0, no message_event_ids row
      insert into messages (id, app_id, event_type, event_id, payload, message_ms)
      values ('msg_legacy_search', 'app_y', 'e', 'ev-x', '{}', 0);`);
    const [other] = (await writeMessages(
      pool,
      [{ appId: "app_y", eventType: "e", payload: "{}", eventId: "ev-y" }],
      5,
    )) as Array<{ messageId: string }>;
    try {
      const byEvent = await lookUpMessages(pool, "ev-x", null);
      expect(byEvent.map((h) => h.id).sort()).toEqual([messageId, "msg_legacy_search"].sort());
      expect((await lookUpMessages(pool, "ev-x", "app_y")).map((h) => h.id)).toEqual([
        "msg_legacy_search",
      ]);
      expect((await lookUpMessages(pool, messageId, null)).map((h) => h.id)).toEqual([messageId]);
      expect(await lookUpMessages(pool, messageId, "app_y")).toEqual([]);
      expect((await lookUpMessages(pool, "ev-y", null)).map((h) => [h.id, h.app_name])).toEqual([
        [other!.messageId, "y"],
      ]);
      expect((await lookUpMessages(pool, "msg_legacy_search", null)).map((h) => h.id)).toEqual([
        "msg_legacy_search",
      ]);
    } finally {
      await pool.query(`
        delete from message_event_ids where app_id = 'app_y';
        delete from messages where app_id = 'app_y';
        delete from applications where id = 'app_y';`);
    }
  });
});

describe("the dead-letter list", () => {
  test("joins its page's rows to their messages, not every period's messages to every dead letter", async () => {
    const pool = db.pool;
    await pool.query(
      `update deliveries set status = 'dead_letter', last_status_code = 500 where message_id = $1`,
      [messageId],
    );
    try {
      const page = await listDeadLetters(pool, {}, { limit: 51 });
      expect(page.map((d) => d.messageId)).toEqual([messageId]);
      const statements = await statementsOf((q) => listDeadLetters(q, {}, { limit: 51 }));
      const read = await partitionsRead(pool, statements[0]!.text, statements[0]!.values);
      // deliveries: each period's index of dead letters gives its newest; messages: the
      // page's own period only
      expect(read.filter((p) => p.startsWith("messages_"))).toEqual([
        dayOf(Date.now(), "messages"),
      ]);
    } finally {
      await pool.query(`update deliveries set status = 'pending' where message_id = $1`, [
        messageId,
      ]);
    }
  });
});
