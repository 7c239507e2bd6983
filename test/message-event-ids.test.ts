/**
 * An application's eventIds in message_event_ids (migration 0033, docs/history.md,
 * "Messages and deliveries"): the enqueue statement writes a message's row before the
 * message and writes the message only when its row was; the migration copies the eventIds
 * of the messages written before it; retention deletes a message's row with it, so the
 * eventId may be used again; deleting the application deletes its rows.
 */
import { readFile } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { RetentionConfig } from "../src/config.ts";
import { splitStatements } from "../src/db/migrate.ts";
import type { Pool } from "../src/db/pool.ts";
import { purgeExpired } from "../src/ops/retention.ts";
import { type NewMessage, writeMessages } from "../src/queue/enqueue-message.ts";
import { createTestDb, type TestDb } from "./helpers/db.ts";

const DAY = 86_400_000;

let db: TestDb;
let pool: Pool;

beforeAll(async () => {
  db = await createTestDb();
  pool = db.pool;
});
afterAll(async () => {
  await db?.drop();
});

async function app(name: string): Promise<string> {
  const id = `app_${name}_${Math.random().toString(36).slice(2, 8)}`;
  await pool.query("insert into applications (id, name) values ($1, $1)", [id]);
  await pool.query(
    "insert into endpoints (id, app_id, url) values ($1, $2, 'http://127.0.0.1:9/')",
    [`ep_${id}`, id],
  );
  return id;
}

const msg = (appId: string, eventId: string | null, payload = "{}"): NewMessage => ({
  appId,
  eventType: "e",
  payload,
  eventId,
});

const rowsOf = async (appId: string) =>
  (
    await pool.query(
      "select event_id, message_id from message_event_ids where app_id = $1 order by event_id",
      [appId],
    )
  ).rows;

describe("message_event_ids", () => {
  test("one row per (app, eventId), naming the message written; a repeat writes nothing", async () => {
    const a = await app("a");
    const b = await app("b");
    const first = await writeMessages(
      pool,
      [msg(a, "ev-1"), msg(a, "ev-1", '{"again":1}'), msg(b, "ev-1"), msg(a, null)],
      5,
    );
    const [one, repeat, other, plain] = first as Array<{ messageId: string; created: boolean }>;
    expect([one!.created, repeat!.created, other!.created, plain!.created]).toEqual([
      true,
      false,
      true,
      true,
    ]);
    expect(repeat!.messageId).toBe(one!.messageId);
    const later = await writeMessages(pool, [msg(a, "ev-1")], 5);
    expect(later[0]).toMatchObject({ messageId: one!.messageId, created: false, deliveries: 0 });
    expect(await rowsOf(a)).toEqual([{ event_id: "ev-1", message_id: one!.messageId }]);
    expect(await rowsOf(b)).toEqual([{ event_id: "ev-1", message_id: other!.messageId }]);
    const { rows } = await pool.query(
      "select count(*)::int as n from messages where app_id = $1 and event_id = 'ev-1'",
      [a],
    );
    expect(rows[0].n).toBe(1);
  });

  test("two transactions writing one eventId at once: the second waits, then writes nothing", async () => {
    const a = await app("tx");
    const c1 = await pool.connect();
    const c2 = await pool.connect();
    try {
      await c1.query("begin");
      const [mine] = await writeMessages(c1, [msg(a, "same")], 5);
      await c2.query("begin");
      const theirs = writeMessages(c2, [msg(a, "same")], 5);
      await new Promise((r) => setTimeout(r, 200));
      await c1.query("commit");
      const [answer] = await theirs;
      await c2.query("commit");
      expect(answer).toMatchObject({
        messageId: (mine as { messageId: string }).messageId,
        created: false,
      });
    } finally {
      c1.release();
      c2.release();
    }
    expect(await rowsOf(a)).toHaveLength(1);
  });

  test("the migration copies the eventIds of the messages written before it", async () => {
    const a = await app("old");
    await pool.query(
      `insert into messages (id, app_id, event_type, event_id, payload)
       values ('msg_old_1', $1, 'e', 'ev-old', '{}'), ('msg_old_2', $1, 'e', null, '{}')`,
      [a],
    );
    expect(await rowsOf(a)).toEqual([]);
    const sql = await readFile(
      path.join(import.meta.dirname, "../src/db/migrations/0033_message_event_ids.sql"),
      "utf8",
    );
    const copy = splitStatements(sql).find((s) => s.includes("insert into message_event_ids"));
    await pool.query(copy!);
    expect(await rowsOf(a)).toEqual([{ event_id: "ev-old", message_id: "msg_old_1" }]);
    const [repeat] = await writeMessages(pool, [msg(a, "ev-old")], 5);
    expect(repeat).toMatchObject({ messageId: "msg_old_1", created: false });
  });

  test("retention deletes a message's row with it: its eventId may then be used again", async () => {
    const a = await app("ret");
    const [old] = (await writeMessages(pool, [msg(a, "ev-ret"), msg(a, "ev-young")], 5)) as Array<{
      messageId: string;
    }>;
    await pool.query("update messages set created_at = now() - interval '40 days' where id = $1", [
      old!.messageId,
    ]);
    await pool.query("update deliveries set status = 'delivered' where message_id = $1", [
      old!.messageId,
    ]);
    const retention: RetentionConfig = {
      payloadMs: 30 * DAY,
      attemptsMs: 30 * DAY,
      deadLetterMs: 30 * DAY,
      batch: 100,
    };
    const totals = await purgeExpired(pool, retention);
    expect(totals.messages).toBeGreaterThanOrEqual(1);
    expect((await rowsOf(a)).map((r) => r.event_id)).toEqual(["ev-young"]);
    const [again] = await writeMessages(pool, [msg(a, "ev-ret")], 5);
    expect(again).toMatchObject({ created: true });
    expect((again as { messageId: string }).messageId).not.toBe(old!.messageId);
  });

  test("deleting the application deletes its rows", async () => {
    const a = await app("gone");
    await writeMessages(pool, [msg(a, "ev-gone")], 5);
    expect(await rowsOf(a)).toHaveLength(1);
    await pool.query("delete from applications where id = $1", [a]);
    expect(await rowsOf(a)).toEqual([]);
  });
});
