/**
 * The result write (src/queue/record-results.ts) updates each delivery row in its own
 * partition: the claim hands the row's message_ms to the worker, the worker hands it back
 * with the result, and PostgreSQL prunes the other periods of deliveries row by row instead
 * of probing each period's id index for every result (docs/performance.md, scenario 3's
 * history). Read from EXPLAIN ANALYZE of the write the worker sends, in a transaction
 * rolled back: the periods without the row are never scanned.
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, expect, test } from "vitest";
import { loadConfig, type PartitionConfig } from "../src/config.ts";
import type { Queryable } from "../src/db/pool.ts";
import { ID_PREFIX, newId } from "../src/ids.ts";
import { ensureMessagePartitions } from "../src/ops/message-partitions.ts";
import { recordResults } from "../src/queue/record-results.ts";
import { createTestDb, type TestDb } from "./helpers/db.ts";
import { successResult } from "./helpers/delivery-result.ts";
import { captureStatement, explainGeneric } from "./helpers/generic-plan.ts";
import { messageIdAt } from "./helpers/message-ids.ts";

const DAY = 86_400_000;
const DAILY: PartitionConfig = { interval: "day", aheadMs: 2 * DAY };

let db: TestDb;
beforeAll(async () => {
  db = await createTestDb();
});
afterAll(async () => {
  await db?.drop();
});

/** An in-flight delivery of a message of `now` (in that day's period), held by a claim token. */
async function inFlightDelivery(pool: Queryable, now: number) {
  const messageId = newId(ID_PREFIX.message, now);
  const token = randomUUID();
  await pool.query(
    `insert into messages (id, app_id, event_type, payload, message_ms)
     values ($1::text, 'app_rw', 't', '{}', hookrelay_message_ms($1::text))`,
    [messageId],
  );
  const { rows } = await pool.query(
    `insert into deliveries (message_id, endpoint_id, app_id, status, max_attempts, next_attempt_at,
                             claim_token, message_ms)
     values ($1::text, 'ep_rw', 'app_rw', 'in_flight', 5, now(), $2::uuid, hookrelay_message_ms($1::text))
     returning id, message_ms, tableoid::regclass::text as part`,
    [messageId, token],
  );
  return {
    id: rows[0].id as string,
    part: rows[0].part as string,
    messageMs: Number(rows[0].message_ms),
    messageId,
    token,
  };
}

/** The statement the worker sends for that delivery's success, captured, not run. */
async function resultWriteFor(d: Awaited<ReturnType<typeof inFlightDelivery>>) {
  const result = successResult({
    deliveryId: Number(d.id),
    messageMs: d.messageMs,
    claimToken: d.token,
    messageId: d.messageId,
    endpointId: "ep_rw",
    appId: "app_rw",
  });
  return captureStatement(
    (recorder) => recordResults(recorder, [result], loadConfig({}).health),
    [{ changed: 1 }],
  );
}

test("a result updates its delivery in the row's period alone, never scanning the others", async () => {
  const pool = db.pool;
  const now = Date.now();
  // three periods of messages and deliveries: the day before, today and tomorrow
  const yesterday = messageIdAt(now - DAY); // newId would not go back a day in a worker that made ids of now
  await pool.query(
    `insert into applications (id, uid, name) values ('app_rw', 'rw', 'rw');
     insert into endpoints (id, app_id, url) values ('ep_rw', 'app_rw', 'http://127.0.0.1:9/');`,
  );
  await pool.query(
    `insert into messages (id, app_id, event_type, payload, message_ms)
     values ($1::text, 'app_rw', 't', '{}', hookrelay_message_ms($1::text))`,
    [yesterday],
  );
  await ensureMessagePartitions(pool, DAILY, 30 * DAY, now);
  const { rows: periods } = await pool.query(
    `select c.relname as name from pg_inherits i join pg_class c on c.oid = i.inhrelid
     where i.inhparent = 'deliveries'::regclass and c.relname ~ '_p\\d' order by 1`,
  );
  expect(periods.length).toBeGreaterThanOrEqual(3);

  const row = await inFlightDelivery(pool, now);
  expect(periods.map((p) => p.name)).toContain(row.part);

  // the statement the worker sends for this result, captured, then run under EXPLAIN ANALYZE
  const statement = await resultWriteFor(row);
  const client = await pool.connect();
  let plan = "";
  try {
    await client.query("begin");
    const explained = await client.query(
      `explain (analyze, costs off, timing off, summary off) ${statement.text}`,
      statement.values,
    );
    plan = explained.rows.map((r) => r["QUERY PLAN"]).join("\n");
    const { rows: after } = await client.query("select status from deliveries where id = $1", [
      row.id,
    ]);
    expect(after[0].status).toBe("delivered");
  } finally {
    await client.query("rollback");
    client.release();
  }
  // the update's lookup: the row's period scanned once, every other period of deliveries not at all
  const update = plan.slice(plan.indexOf("Update on deliveries"), plan.indexOf("CTE samples"));
  const scans = update.split("\n").filter((l) => /Scan .*on deliveries_/.test(l));
  const scanned = scans.filter((l) => !l.includes("never executed"));
  expect(scanned, update).toHaveLength(1);
  expect(scanned[0], update).toContain(row.part);
});

test("the worker's generic plan of the write starts no scan of a period outside the batch's message times", async () => {
  const pool = db.pool;
  const now = Date.now();
  // a month of periods behind today, as a running hookrelay keeps them
  await ensureMessagePartitions(
    pool,
    { interval: "day", aheadMs: 32 * DAY },
    40 * DAY,
    now - 30 * DAY,
  );
  const { rows: parts } = await pool.query(
    "select count(*)::int as n from pg_partition_tree('deliveries') where isleaf",
  );
  expect(parts[0].n).toBeGreaterThanOrEqual(33);

  const row = await inFlightDelivery(pool, now);
  // as the worker runs it: a prepared statement's generic plan (db/local-settings.ts)
  const plan = await explainGeneric(pool, await resultWriteFor(row));
  const update = plan.slice(plan.indexOf("Update on deliveries"), plan.indexOf("CTE samples"));
  // every period but the row's was left out when the plan started: no scan of it at all
  const scans = update.split("\n").filter((l) => /Scan .*on deliveries_/.test(l));
  expect(scans, update).toHaveLength(1);
  expect(scans[0], update).toContain(row.part);
  expect(update).toMatch(/Subplans Removed: \d+/);
});
