/**
 * PostgreSQL deduplication in the receiver's own database (an empty one, nothing of
 * hookrelay in it): the seen-mark commits or rolls back with the business write, and
 * concurrent deliveries of one message make exactly one effect.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import {
  createDedupTable,
  dedupTableSql,
  isSeen,
  makePgDedupStore,
  markSeen,
  purgeSeen,
} from "../src/receiver/index.ts";
import { createTestDb, type TestDb } from "./helpers/db.ts";
import { waitFor } from "./helpers/receiver.ts";

let db: TestDb;

beforeAll(async () => {
  db = await createTestDb({ template: false });
  await createDedupTable(db.pool);
  await createDedupTable(db.pool); // idempotent
  await db.pool.query(
    "create table effects (id bigint generated always as identity primary key, webhook_id text not null)",
  );
});
afterAll(async () => {
  await db?.drop();
});

/** One delivery's handler: the mark and the effect in one transaction. */
async function handle(
  id: string,
  options: { holdMs?: number; fail?: boolean } = {},
): Promise<"done" | "duplicate"> {
  const client = await db.pool.connect();
  try {
    await client.query("begin");
    if (!(await markSeen(client, id))) {
      await client.query("rollback");
      return "duplicate";
    }
    await client.query("insert into effects (webhook_id) values ($1::text)", [id]);
    if (options.holdMs) await client.query("select pg_sleep($1::float8)", [options.holdMs / 1000]);
    if (options.fail) throw new Error("the business logic failed");
    await client.query("commit");
    return "done";
  } catch (err) {
    await client.query("rollback");
    throw err;
  } finally {
    client.release();
  }
}

const effectsOf = async (id: string) =>
  (
    await db.pool.query<{ n: number }>(
      "select count(*)::int as n from effects where webhook_id = $1::text",
      [id],
    )
  ).rows[0]!.n;

describe("markSeen in the receiver's transaction", () => {
  test("the business write and the seen-mark commit together; a second delivery is a duplicate", async () => {
    expect(await handle("msg_a")).toBe("done");
    expect(await handle("msg_a")).toBe("duplicate");
    expect(await isSeen(db.pool, "msg_a")).toBe(true);
    expect(await effectsOf("msg_a")).toBe(1);
  });

  test("a rolled-back transaction leaves the id unseen, so the redelivery makes the effect", async () => {
    await expect(handle("msg_b", { fail: true })).rejects.toThrow(/business logic failed/);
    expect(await isSeen(db.pool, "msg_b")).toBe(false);
    expect(await effectsOf("msg_b")).toBe(0);
    expect(await handle("msg_b")).toBe("done");
    expect(await effectsOf("msg_b")).toBe(1);
  });

  test("concurrent deliveries of one message: exactly one effect", async () => {
    const outcomes = await Promise.all(
      Array.from({ length: 8 }, () => handle("msg_c", { holdMs: 50 })),
    );
    expect(outcomes.filter((o) => o === "done")).toHaveLength(1);
    expect(outcomes.filter((o) => o === "duplicate")).toHaveLength(7);
    expect(await effectsOf("msg_c")).toBe(1);
  });

  test("a copy waits for the transaction holding the mark, and takes over if it rolls back", async () => {
    const first = await db.pool.connect();
    const second = await db.pool.connect();
    try {
      await first.query("begin");
      expect(await markSeen(first, "msg_d")).toBe(true);
      const pid = async (c: typeof first) =>
        (await c.query("select pg_backend_pid() as pid")).rows[0].pid as number;
      const [firstPid, secondPid] = [await pid(first), await pid(second)];
      await second.query("begin");
      let settled = false;
      const waiting = markSeen(second, "msg_d").finally(() => {
        settled = true;
      });
      // blocked on the first transaction's uncommitted row (PostgreSQL says who blocks whom)
      await waitFor(
        async () =>
          (
            await db.pool.query("select pg_blocking_pids($1) as pids", [secondPid])
          ).rows[0].pids.includes(firstPid),
        5_000,
        "the copy to wait for the first transaction",
      );
      expect(settled).toBe(false);
      await first.query("rollback");
      expect(await waiting).toBe(true);
      await second.query("commit");
      expect(await isSeen(db.pool, "msg_d")).toBe(true);
    } finally {
      first.release();
      second.release();
    }
  });
});

describe("the table", () => {
  test("old marks are purged in batches; recent ones stay", async () => {
    const table = { table: "purge_test" };
    await createDedupTable(db.pool, table);
    await db.pool.query(
      `insert into purge_test (webhook_id, seen_at)
       select 'old_' || i, now() - interval '31 days' from generate_series(1, 7) i`,
    );
    expect(await markSeen(db.pool, "recent", table)).toBe(true);
    expect(await purgeSeen(db.pool, { ...table, olderThanMs: 30 * 86_400_000, batchSize: 3 })).toBe(
      7,
    );
    const { rows } = await db.pool.query("select webhook_id from purge_test");
    expect(rows).toEqual([{ webhook_id: "recent" }]);
  });

  test("a schema-qualified name works; anything else is refused before any SQL runs", async () => {
    await db.pool.query("create schema hooks");
    await createDedupTable(db.pool, { table: "hooks.seen" });
    expect(await markSeen(db.pool, "x", { table: "hooks.seen" })).toBe(true);
    expect(dedupTableSql({ table: "hooks.seen" })).toContain('"hooks"."seen"');
    for (const table of ["seen; drop table effects", "a.b.c", '"quoted"', ""]) {
      expect(() => dedupTableSql({ table }), table).toThrow(/plain identifier/);
    }
  });

  test("makePgDedupStore gives the middlewares the same table through a pool", async () => {
    const store = makePgDedupStore(db.pool);
    expect(await store.seen("msg_e")).toBe(false);
    expect(await store.markSeen("msg_e")).toBe(true);
    expect(await store.markSeen("msg_e")).toBe(false);
    expect(await store.seen("msg_e")).toBe(true);
    // the store and markSeen() in a transaction share one table
    expect(await isSeen(db.pool, "msg_a")).toBe(true);
    expect(await store.seen("msg_a")).toBe(true);
  });
});
