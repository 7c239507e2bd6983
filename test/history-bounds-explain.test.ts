/**
 * The dashboard's and the API's reads of the queue and of an endpoint's attempts plan and
 * read only the periods that can hold their rows (docs/history.md, "The dashboard on a long
 * history"): queued rows from the claim's floor's day up (db/queries/queue-bounds.ts), an
 * endpoint's newest attempts from today's period back, a window at a time, until the page
 * is full (db/queries/attempts.ts). Each statement a call sends is explained with its
 * values, in a custom plan and in a generic one; it fails when an older day's partition is
 * read. The dead-letter counts (every period: a dead letter has no time bound) are
 * statements of their own and are left out.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { endpointTable } from "../src/dashboard/sql/endpoint-table.ts";
import type { Pool, Queryable } from "../src/db/pool.ts";
import { listAttempts } from "../src/db/queries/attempts.ts";
import { getEndpointHealth, listEndpointHealth } from "../src/db/queries/endpoint-health.ts";
import { queryGeneric } from "../src/db/queries/generic-plan.ts";
import { currentAlerts } from "../src/ops/alerts.ts";
import { ensureAttemptPartitions, partitionName } from "../src/ops/attempt-partitions.ts";
import { analyzeDeadLetters, listDeadLetters } from "../src/ops/dead-letters.ts";
import { raiseDeliveryFloor } from "../src/ops/delivery-floor.ts";
import { healthSummary } from "../src/ops/health-summary.ts";
import { ensureMessagePartitions } from "../src/ops/message-partitions.ts";
import { listBlockedKeys } from "../src/ops/ordering-keys.ts";
import { writeMessages } from "../src/queue/enqueue-message.ts";
import { createTestDb, type TestDb } from "./helpers/db.ts";

const DAY = 86_400_000;
/** The nine days' partitions before the day of `from` (default now). */
const olderDays = (table: "messages" | "deliveries" | "attempts", from = Date.now()) =>
  Array.from({ length: 9 }, (_, i) => {
    const ms = from - (i + 1) * DAY;
    return partitionName(ms - (ms % DAY), "day", table);
  });

/** The statements `call` sends (run for real: each one's answer feeds the next). */
async function statementsOf(
  pool: Pool,
  call: (db: Queryable) => Promise<unknown>,
): Promise<Array<{ text: string; values: unknown[] }>> {
  const sent: Array<{ text: string; values: unknown[] }> = [];
  const recorder = {
    query: (text: string | { text: string; values: unknown[] }, values?: unknown[]) => {
      const s = typeof text === "string" ? { text, values: values ?? [] } : text;
      sent.push({ text: s.text, values: s.values ?? [] });
      return pool.query(s.text, s.values ?? []);
    },
  } as unknown as Queryable;
  await call(recorder);
  return sent;
}

/** The history partitions a statement reads, in a custom plan and in a generic one. */
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
      .match(/\b(messages|deliveries|attempts)_(p\d+|default|legacy)(?!\w)/g);
    return [...new Set(read ?? [])];
  } finally {
    client.release();
  }
}

/** Every statement of `call` that reads deliveries or attempts, but the dead-letter counts. */
async function historyReads(pool: Pool, call: (db: Queryable) => Promise<unknown>) {
  const statements = (await statementsOf(pool, call)).filter(
    (s) => /\b(deliveries|attempts)\b/.test(s.text) && !/\bdead_lettered\b/.test(s.text),
  );
  expect(statements.length).toBeGreaterThan(0);
  const reads: Array<{ text: string; read: string[] }> = [];
  for (const s of statements) {
    reads.push({ text: s.text, read: await partitionsRead(pool, s.text, s.values) });
  }
  return reads;
}

let db: TestDb;
/** the claim's floor as the maintenance task raised it (epoch ms) */
let floorMs = 0;
beforeAll(async () => {
  db = await createTestDb();
  const pool = db.pool;
  // ten days of periods, as a running installation has
  const config = { interval: "day" as const, aheadMs: 12 * DAY };
  await ensureMessagePartitions(pool, config, 12 * DAY, Date.now() - 10 * DAY);
  await ensureAttemptPartitions(pool, config, 12 * DAY, Date.now() - 10 * DAY);
  await pool.query(`
    insert into applications (id, name) values ('app_x', 'x');
    insert into endpoints (id, app_id, url) values ('ep_x', 'app_x', 'http://127.0.0.1:9/x');`);
  await writeMessages(
    pool,
    [
      { appId: "app_x", eventType: "e", payload: "{}", orderingKey: "k" },
      { appId: "app_x", eventType: "e", payload: "{}", orderingKey: "k" },
    ],
    5,
  );
  // the first of the key failed and waits for its retry: the key is blocked
  await pool.query(`
    update deliveries set status = 'failed', next_attempt_at = now() + interval '1 hour',
           attempt_count = 1
    where id = (select min(id) from deliveries)`);
  // three attempts today, one five days ago
  await pool.query(`
    insert into attempts (delivery_id, message_id, endpoint_id, app_id, attempt_number, trigger,
                          url, started_at, latency_ms, outcome, status_code)
    select d.id, d.message_id, d.endpoint_id, d.app_id, g, 'scheduled', 'http://127.0.0.1:9/x',
           now(), 10, 'failure', 503
    from deliveries d cross join generate_series(1, 3) g where d.id = (select min(id) from deliveries);
    insert into attempts (id, delivery_id, message_id, endpoint_id, app_id, attempt_number,
                          trigger, url, started_at, created_at, latency_ms, outcome, status_code)
    select hookrelay_attempt_id_at(now() - interval '5 days'), d.id, d.message_id, d.endpoint_id,
           d.app_id, 1, 'scheduled', 'http://127.0.0.1:9/x', now() - interval '5 days',
           now() - interval '5 days', 10, 'failure', 503
    from deliveries d where d.id = (select min(id) from deliveries);`);
  // the floor, as the maintenance task keeps it: today's period holds the queued rows
  floorMs = await raiseDeliveryFloor(pool);
  await pool.query("analyze messages; analyze deliveries; analyze attempts");
});
afterAll(() => db?.drop());

describe("the queue's reads start at the floor's day", () => {
  test.each([
    [
      "an endpoint's health (its page, GET .../health)",
      (q: Queryable) => getEndpointHealth(q, "ep_x"),
    ],
    [
      "the health listing (GET /health/endpoints)",
      (q: Queryable) =>
        listEndpointHealth(
          q,
          { appId: null, circuitState: null, slow: null },
          { cursor: null, op: ">", direction: "asc", limit: 50 },
        ),
    ],
    ["the health summary (the overview's cards)", (q: Queryable) => healthSummary(q, null)],
    [
      "the endpoint table, by p95",
      (q: Queryable) =>
        endpointTable(q, {
          appId: null,
          state: null,
          slow: false,
          sort: "p95",
          descending: true,
          limit: 50,
          offset: 0,
        }),
    ],
    [
      "the endpoint table, by backlog",
      (q: Queryable) =>
        endpointTable(q, {
          appId: null,
          state: null,
          slow: false,
          sort: "backlog",
          descending: true,
          limit: 50,
          offset: 0,
        }),
    ],
    [
      "the blocked keys (no dead letter with a key)",
      (q: Queryable) => listBlockedKeys(q, "ep_x", { after: null, limit: 50 }),
    ],
    [
      "the alerts (the oldest pending)",
      (q: Queryable) =>
        currentAlerts(q, {
          alerts: { deadLetterWindowMs: 3_600_000, deadLetterMin: 10, oldestPendingMs: 3_600_000 },
          health: { windowMs: DAY },
        } as never),
    ],
  ])("%s", async (_, call) => {
    for (const { text, read } of await historyReads(db.pool, call)) {
      // from the floor's day: an hour before now, so yesterday's in a day's first hour
      for (const old of olderDays("deliveries", floorMs)) expect(read, text).not.toContain(old);
    }
  });

  test("and still answer: the blocked key, the queue's counts", async () => {
    const keys = await listBlockedKeys(db.pool, "ep_x", { after: null, limit: 50 });
    expect(keys.map((k) => [k.key, k.status, k.waiting])).toEqual([["k", "failed", 1]]);
    const health = await getEndpointHealth(db.pool, "ep_x");
    expect([health?.pending, health?.dead_letter]).toEqual([2, 0]);
    expect((await healthSummary(db.pool, null)).awaitingRetry).toBe(1);
  });
});

describe("an endpoint's newest attempts", () => {
  const page = (limit: number) => ({ cursor: null, op: "<", direction: "desc", limit }) as const;
  const filter = { messageId: null, endpointId: "ep_x", outcome: null };

  test("a page today's period fills reads today's period only", async () => {
    const reads = await historyReads(db.pool, (q) => listAttempts(q, filter, page(3)));
    expect(reads.length).toBe(1);
    for (const old of olderDays("attempts")) expect(reads[0]!.read).not.toContain(old);
  });

  test("a longer page walks back until it is full, newest first, and reads each day once", async () => {
    const rows = await listAttempts(db.pool, filter, page(10));
    expect(rows.length).toBe(4);
    expect(rows.map((r) => r.id)).toEqual([...rows.map((r) => r.id)].sort((a, b) => b - a));
    const reads = await historyReads(db.pool, (q) => listAttempts(q, filter, page(10)));
    const days = reads.flatMap((r) => r.read.filter((p) => /_p\d+$/.test(p)));
    expect(days.length, days.join()).toBe(new Set(days).size);
    // the page after the fourth row: from the five-day-old row's day down
    const next = await listAttempts(db.pool, filter, { ...page(10), cursor: rows[3]!.id });
    expect(next).toEqual([]);
  });
});

describe("statements of every period (dead letters) run with their generic plan", () => {
  test("queryGeneric: the statement sees force_generic_plan, the connection keeps its own", async () => {
    const pool = db.pool;
    const { rows } = await queryGeneric<{ mode: string }>(pool, {
      name: "test_generic_mode",
      text: "select current_setting('plan_cache_mode') as mode, $1::int as one",
      values: [1],
    });
    expect(rows[0]!.mode).toBe("force_generic_plan");
    // every connection of the pool back at its setting
    const clients = await Promise.all([pool.connect(), pool.connect()]);
    try {
      for (const c of clients) {
        const { rows: after } = await c.query("select current_setting('plan_cache_mode') as mode");
        expect(after[0].mode).toBe("auto");
      }
    } finally {
      for (const c of clients) c.release();
    }
  });

  test("the dead-letter counts, list, analysis and the ordered-dead check answer through it", async () => {
    const pool = db.pool;
    await pool.query(
      "update deliveries set status = 'dead_letter' where id = (select min(id) from deliveries)",
    );
    try {
      expect((await getEndpointHealth(pool, "ep_x"))?.dead_letter).toBe(1);
      expect((await healthSummary(pool, null)).deadLetter).toBe(1);
      expect((await listDeadLetters(pool, { endpointId: "ep_x" }, { limit: 5 })).length).toBe(1);
      const analysis = await analyzeDeadLetters(pool, { endpointId: "ep_x", since: new Date(0) });
      expect(analysis.endpoints.map((e) => e.deadCount)).toEqual([1]);
      // the key's head is dead now: the listing reads the dead heads too
      const keys = await listBlockedKeys(pool, "ep_x", { after: null, limit: 50 });
      expect(keys.map((k) => [k.key, k.status, k.waiting])).toEqual([["k", "dead_letter", 1]]);
    } finally {
      await pool.query(
        "update deliveries set status = 'failed' where id = (select min(id) from deliveries)",
      );
    }
  });
});
