/**
 * A period's detach waits for its lock a bounded time, tries again after a pause, and when
 * statements under way keep the lock it leaves the period for the next run: retention goes
 * on and lists the period in busyPartitions, never fails the whole run (a full-size bench
 * run of scenario 19 was stopped by such a lock timeout while a worker delivered at full
 * speed). docs/history.md, "Retention".
 */
import pg from "pg";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { RetentionConfig } from "../src/config.ts";
import { withTransaction } from "../src/db/pool.ts";
import {
  BUSY,
  type DetachPatience,
  detachTransaction,
  ensureAttemptPartitions,
  partitionName,
} from "../src/ops/attempt-partitions.ts";
import { ensureMessagePartitions } from "../src/ops/message-partitions.ts";
import { purgeExpiredUntil } from "../src/ops/retention.ts";
import { createTestDb, type TestDb } from "./helpers/db.ts";

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
/** test speed: 100 ms a try, two tries */
const QUICK: DetachPatience = { lockTimeoutMs: 100, tries: 2, pauseMs: 10 };
const RETENTION: RetentionConfig = {
  payloadMs: 3 * DAY,
  attemptsMs: 3 * DAY,
  deadLetterMs: 10 * DAY,
  batch: 1_000,
};

let db: TestDb;
const dayStart = (ms: number) => ms - (ms % DAY);
const old = dayStart(Date.now() - 5 * DAY);
const names = {
  messages: partitionName(old, "day", "messages"),
  deliveries: partitionName(old, "day", "deliveries"),
  attempts: partitionName(old, "day", "attempts"),
};

/** True while `name` is a table (attached or not). */
const exists = async (name: string) =>
  (await db.pool.query("select to_regclass($1) is not null as t", [name])).rows[0].t as boolean;

/** A whole retention run, its detaches at test speed. */
const purge = () =>
  purgeExpiredUntil(db.pool, RETENTION, Number.POSITIVE_INFINITY, undefined, db.pool, QUICK);

/**
 * An open transaction on another connection that has read `tables` (ACCESS SHARE held), or
 * that holds them in `mode`.
 */
async function reader(tables: string[], mode?: string): Promise<{ release(): Promise<void> }> {
  const client = new pg.Client({ connectionString: db.url });
  await client.connect();
  await client.query("begin");
  for (const t of tables)
    await client.query(
      mode === undefined ? `select count(*) from ${t}` : `lock table ${t} in ${mode} mode`,
    );
  return {
    async release() {
      await client.query("rollback");
      await client.end();
    },
  };
}

/** The old day's periods of all three tables, each with one delivered message's rows. */
async function oldDay(): Promise<void> {
  const daily = { interval: "day" as const, aheadMs: 0 };
  await ensureMessagePartitions(db.pool, daily, 8 * DAY, old);
  await ensureAttemptPartitions(db.pool, daily, 8 * DAY, old);
  await db.pool.query(
    `insert into messages (id, app_id, event_type, payload, message_ms, created_at)
     values ($1, 'app_b', 'e', '{}', $2, $3)`,
    ["msg_busy_old", old + HOUR, new Date(old + HOUR)],
  );
  await db.pool.query(
    `insert into deliveries (message_id, endpoint_id, app_id, status, max_attempts, message_ms,
                             created_at, updated_at)
     values ('msg_busy_old', 'ep_b', 'app_b', 'delivered', 5, $1, $2, $2)`,
    [old + HOUR, new Date(old + HOUR)],
  );
}

beforeAll(async () => {
  db = await createTestDb();
  await db.pool.query(`
    insert into applications (id, name) values ('app_b', 'b');
    insert into endpoints (id, app_id, url) values ('ep_b', 'app_b', 'http://127.0.0.1:9/b');`);
});
afterAll(() => db?.drop());

describe("a detach whose lock statements under way hold", () => {
  test("is left for the next run: retention goes on, lists it, and the next run drops it", async () => {
    await oldDay();
    const held = await reader(["deliveries", "attempts"]);
    let first: Awaited<ReturnType<typeof purgeExpiredUntil>>;
    try {
      first = await purge();
    } finally {
      await held.release();
    }
    expect(first.busyPartitions.sort()).toEqual([names.attempts, names.deliveries].sort());
    expect(first.done).toBe(true);
    // left whole: the messages' period too, since its deliveries' could not go first
    for (const name of Object.values(names)) expect(await exists(name)).toBe(true);

    const second = await purge();
    expect(second.busyPartitions).toEqual([]);
    expect(second.droppedPartitions.map((p) => p.name)).toEqual(
      expect.arrayContaining(Object.values(names)),
    );
    for (const name of Object.values(names)) expect(await exists(name)).toBe(false);
  });

  test("the messages' period busy after its deliveries' went: only the deliveries' table is dropped, the next run takes the messages'", async () => {
    await oldDay();
    const held = await reader(["messages"]);
    let first: Awaited<ReturnType<typeof purgeExpiredUntil>>;
    try {
      first = await purge();
    } finally {
      await held.release();
    }
    expect(first.busyPartitions).toEqual([names.messages]);
    expect(await exists(names.deliveries)).toBe(false);
    // still attached, its message in place
    const { rows } = await db.pool.query(
      "select tableoid::regclass::text as p from messages where id = 'msg_busy_old'",
    );
    expect(rows).toEqual([{ p: names.messages }]);

    const second = await purge();
    expect(second.busyPartitions).toEqual([]);
    expect(await exists(names.messages)).toBe(false);
  });
});

describe("a detach beside a vacuum of another period", () => {
  test("is not held by it (autovacuum's SHARE UPDATE EXCLUSIVE lock on today's period)", async () => {
    await oldDay();
    const now = Date.now();
    const daily = { interval: "day" as const, aheadMs: 0 };
    await ensureMessagePartitions(db.pool, daily, 8 * DAY, now);
    await ensureAttemptPartitions(db.pool, daily, 8 * DAY, now);
    const today = (t: "messages" | "deliveries" | "attempts") =>
      partitionName(dayStart(now), "day", t);
    const vacuum = await reader(
      [today("deliveries"), today("messages"), today("attempts")],
      "share update exclusive",
    );
    let run: Awaited<ReturnType<typeof purgeExpiredUntil>>;
    try {
      run = await purge();
    } finally {
      await vacuum.release();
    }
    expect(run.busyPartitions).toEqual([]);
    for (const name of Object.values(names)) expect(await exists(name)).toBe(false);
    for (const t of ["deliveries", "messages", "attempts"] as const)
      expect(await exists(today(t))).toBe(true);
  });
});

describe("a detach beside the floor's upkeep", () => {
  test("does not deadlock with it (the default partition read first, then the periods oldest first, without the parent)", async () => {
    await oldDay();
    // the upkeep's transaction (ops/delivery-floor.ts), as far as its read of the default
    // partition
    const upkeep = new pg.Client({ connectionString: db.url });
    await upkeep.connect();
    try {
      await upkeep.query("begin");
      await upkeep.query("select count(*) from deliveries_default");
      const patient: DetachPatience = { lockTimeoutMs: 10_000, tries: 1, pauseMs: 0 };
      const run = purgeExpiredUntil(
        db.pool,
        RETENTION,
        Number.POSITIVE_INFINITY,
        undefined,
        db.pool,
        patient,
      );
      // the detach waits for the default partition...
      await waitForLockWait();
      // ...holding nothing the upkeep reads next: the old period, read at once
      const read = await upkeep.query(`select count(*)::int as n from ${names.deliveries}`);
      expect(read.rows[0].n).toBe(1);
      await upkeep.query("commit");
      const done = await run;
      expect(done.busyPartitions).toEqual([]);
      for (const name of Object.values(names)) expect(await exists(name)).toBe(false);
    } finally {
      await upkeep.end();
    }
  });
});

/** Until a session other than the test's waits for a lock. */
async function waitForLockWait(): Promise<void> {
  for (let i = 0; i < 500; i++) {
    const { rows } = await db.pool.query(
      "select count(*)::int as n from pg_stat_activity where wait_event_type = 'Lock' and datname = current_database()",
    );
    if (rows[0].n > 0) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error("no session waited for a lock");
}

describe("detachTransaction", () => {
  const lockTimeout = () => Object.assign(new Error("lock timeout"), { code: "55P03" });

  test("tries again after a lock timeout, within its tries", async () => {
    let calls = 0;
    const value = await detachTransaction(db.pool, { ...QUICK, tries: 3 }, async (client) => {
      calls++;
      // each try runs with the patience's lock_timeout
      const { rows } = await client.query("select current_setting('lock_timeout') as t");
      expect(rows[0].t).toBe("100ms");
      if (calls < 3) throw lockTimeout();
      return "detached";
    });
    expect([value, calls]).toEqual(["detached", 3]);
  });

  test("gives BUSY after its last try, and throws any other error at once", async () => {
    let calls = 0;
    const busy = await detachTransaction(db.pool, QUICK, async () => {
      calls++;
      throw lockTimeout();
    });
    expect([busy, calls]).toEqual([BUSY, 2]);
    let others = 0;
    await expect(
      detachTransaction(db.pool, QUICK, async () => {
        others++;
        throw Object.assign(new Error("no such table"), { code: "42P01" });
      }),
    ).rejects.toThrow("no such table");
    expect(others).toBe(1);
    // the lock_timeout was the transaction's own
    await withTransaction(db.pool, async (client) => {
      const { rows } = await client.query("select current_setting('lock_timeout') as t");
      expect(rows[0].t).toBe("0");
    });
  });
});
