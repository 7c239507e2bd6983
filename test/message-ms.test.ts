/**
 * The millisecond a message id carries, as SQL reads it (hookrelay_message_ms) and as the
 * API does (idTimeMs), must agree to the millisecond: messages and deliveries are
 * partitioned by it, and a lookup by id reads only its partitions. Migration 0034's SQL
 * rounded it up for about one id in 20,000 (a CI run's lookup of such a message answered
 * 404); 0042 divides exactly, and lookups still find the rows an SQL statement wrote with
 * 0034's rounding (src/db/sql/message-ms.ts).
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { lookUpMessages } from "../src/dashboard/sql/message-lookup.ts";
import { deliveryCountsOf } from "../src/db/queries/message-delivery-counts.ts";
import { findMessage, getMessage } from "../src/db/queries/messages.ts";
import { ID_PREFIX, idTimeMs } from "../src/ids.ts";
import { createTestDb, type TestDb } from "./helpers/db.ts";
import { messageIdAt } from "./helpers/message-ids.ts";

const TOP = 1n << 80n;
const messageId = messageIdAt;

let db: TestDb;
beforeAll(async () => {
  db = await createTestDb();
  await db.pool.query("insert into applications (id, name) values ('app_ms', 'ms')");
});
afterAll(() => db?.drop());

describe("hookrelay_message_ms", () => {
  test("agrees with idTimeMs, random bits near their top included", async () => {
    const now = Date.now();
    const ids = [
      "msg_035AE3vO19YJwigstIQcLe", // the CI run's: 80 random bits at 0.99996 of their range
      messageId(now, 0n),
      messageId(now, TOP - 1n),
      messageId(now, TOP - (TOP >> 14n)),
      messageId(1, TOP - 1n),
      messageId(2 ** 47, TOP - 1n),
    ];
    // random bits spread over the top thousandth of their range, where 0034 rounded up
    for (let i = 0; i < 500; i++)
      ids.push(
        messageId(
          now - i * 86_399,
          TOP - 1n - (BigInt(Math.floor(Math.random() * 2 ** 40)) * (TOP / 1000n)) / 2n ** 40n,
        ),
      );
    const { rows } = await db.pool.query<{ id: string; ms: string }>(
      "select id, hookrelay_message_ms(id)::text as ms from unnest($1::text[]) as id",
      [ids],
    );
    const wrong = rows.filter((r) => Number(r.ms) !== idTimeMs(r.id, ID_PREFIX.message));
    expect(wrong).toEqual([]);
  });

  test("is 0 for a string of another shape", async () => {
    const { rows } = await db.pool.query(
      "select hookrelay_message_ms('msg_short') as a, hookrelay_message_ms('ep_035AE3vO19YJwigstIQcLe') as b",
    );
    expect(rows[0]).toEqual({ a: 0, b: 0 });
  });
});

describe("a lookup by id", () => {
  const base = idTimeMs("msg_035AE3vO19YJwigstIQcLe", ID_PREFIX.message)!;

  /** A message and its one delivery, stored with `storedMs` as their millisecond. */
  async function write(messageId: string, eventId: string, storedMs: number) {
    await db.pool.query(
      `insert into messages (id, app_id, event_type, event_id, payload, message_ms)
       values ($1, 'app_ms', 'e', $2, '{}', $3)`,
      [messageId, eventId, storedMs],
    );
    await db.pool.query(
      "insert into message_event_ids (app_id, event_id, message_id) values ('app_ms', $1, $2)",
      [eventId, messageId],
    );
    await db.pool.query(
      `insert into endpoints (id, app_id, url) values ('ep_ms', 'app_ms', 'http://127.0.0.1:9/')
       on conflict do nothing`,
    );
    await db.pool.query(
      `insert into deliveries (message_id, endpoint_id, app_id, status, max_attempts, message_ms)
       values ($1, 'ep_ms', 'app_ms', 'delivered', 5, $2)`,
      [messageId, storedMs],
    );
  }

  const api = "msg_035AE3vO19YJwigstIQcLe";
  const sqlBefore0042 = messageId(base + 7, TOP - 3n);
  for (const [who, id, storedMs, eventId] of [
    ["the API wrote (idTimeMs)", api, base, "evt-api"],
    ["an SQL statement wrote before 0042 (a millisecond up)", sqlBefore0042, base + 8, "evt-sql"],
  ] as const) {
    test(`finds a message ${who}: by id, by eventId, in the dashboard's lookup and its delivery counts`, async () => {
      await write(id, eventId, storedMs);
      expect((await getMessage(db.pool, id))?.id).toBe(id);
      expect((await findMessage(db.pool, "app_ms", id))?.id).toBe(id);
      expect((await findMessage(db.pool, "app_ms", eventId))?.id).toBe(id);
      expect((await lookUpMessages(db.pool, id, null)).map((h) => h.id)).toEqual([id]);
      expect((await lookUpMessages(db.pool, eventId, null)).map((h) => h.id)).toEqual([id]);
      expect((await deliveryCountsOf(db.pool, [id])).get(id)).toEqual({ delivered: 1 });
    });
  }
});
