/**
 * The claim's generic plan is made of index probes whatever the statistics were when it was
 * built (src/queue/claim-deliveries.ts, CLAIM_SETTINGS; src/queue/claim-pick.ts;
 * docs/delivery.md, "The claim's plan"). A worker plans the claim once per connection and
 * keeps the plan until a table it reads changes its statistics, so the plan may have been
 * built while deliveries looked empty (a worker started before its backlog came, a new
 * period's partition before its first row) or while no dead letter existed. Built so, the
 * plan without the claim's settings hash-joined the keys' heads with every queued row and
 * scanned the whole partition for the claimed rows, and its dead-letter probe read the
 * dead letters by time (deliveries_dead_letter_order_idx) instead of by key: scenario 13's
 * slow runs (docs/performance.md, "The claim's plan and the statistics").
 *
 * The plan is read with EXPLAIN of the prepared statement (its cached generic plan, the one
 * the worker runs), on a database whose autovacuum is off for the claim's tables, so nothing
 * replans it behind the test's back; nothing depends on timing.
 */
import { randomUUID } from "node:crypto";
import pg from "pg";
import { afterAll, beforeAll, expect, test } from "vitest";
import type { Queryable } from "../src/db/pool.ts";
import { ID_PREFIX, newId } from "../src/ids.ts";
import { ensureMessagePartitions } from "../src/ops/message-partitions.ts";
import { CLAIM_SETTINGS, claimDeliveries } from "../src/queue/claim-deliveries.ts";
import { createTestDb, type TestDb } from "./helpers/db.ts";
import { executeArguments } from "./helpers/generic-plan.ts";

const DAY = 86_400_000;
const ENDPOINTS = 20;
const KEYS = 5;
const DEPTH = 20;

let db: TestDb;
beforeAll(async () => {
  db = await createTestDb();
  // the periods of a running hookrelay: yesterday to two days ahead
  await ensureMessagePartitions(
    db.pool,
    { interval: "day", aheadMs: 2 * DAY },
    30 * DAY,
    Date.now() - DAY,
  );
  // no autovacuum on any table: its ANALYZE would replan the prepared claim mid-test
  await db.pool.query(`
    do $$
    declare t record;
    begin
      for t in select c.oid::regclass as name from pg_class c
               join pg_namespace n on n.oid = c.relnamespace
               where n.nspname = 'public' and c.relkind = 'r'
      loop
        execute format('alter table %s set (autovacuum_enabled = false)', t.name);
      end loop;
    end
    $$`);
});
afterAll(async () => {
  await db?.drop();
});

const options = () => ({
  workerId: "plan-statistics",
  workerLock: null,
  claimToken: randomUUID(),
  limit: 256,
  defaultMaxInFlight: 20,
  defaultTimeoutMs: 15_000,
  leaseMarginMs: 5_000,
});

/** The statement the worker sends, captured (text and parameters). */
async function claimStatement(): Promise<{ text: string; values: unknown[] }> {
  let sent: { text: string; values: unknown[] } | null = null;
  const recorder = {
    query: async (q: { text: string; values: unknown[] }) => {
      sent = q;
      return { rows: [] };
    },
  } as unknown as Queryable;
  await claimDeliveries(recorder, options());
  return sent as unknown as { text: string; values: unknown[] };
}

/**
 * A connection with the claim's settings (as the worker's claim transaction has them) and
 * the claim prepared and planned now: its generic plan is built from the statistics of this
 * moment and kept.
 */
async function planNow(): Promise<{ explain(): Promise<string>; end(): Promise<void> }> {
  const client = new pg.Client({ connectionString: db.url });
  await client.connect();
  for (const [name, value] of Object.entries(CLAIM_SETTINGS))
    await client.query("select set_config($1, $2, false)", [name, value]);
  const statement = await claimStatement();
  await client.query(`prepare claim as ${statement.text}`);
  const explain = async () => {
    const args = executeArguments(client, (await claimStatement()).values);
    const { rows } = await client.query(`explain (costs off) execute claim(${args})`);
    return rows.map((r) => r["QUERY PLAN"]).join("\n");
  };
  await explain();
  return { explain, end: () => client.end() };
}

/** ENDPOINTS endpoints with KEYS keys each, DEPTH messages deep, due now. */
async function seedBacklog(): Promise<void> {
  const ids: string[] = [];
  const endpoints: string[] = [];
  const keys: string[] = [];
  for (let i = 0; i < ENDPOINTS * KEYS * DEPTH; i++) {
    ids.push(newId(ID_PREFIX.message));
    const key = i % (ENDPOINTS * KEYS);
    endpoints.push(`ep_ps_${key % ENDPOINTS}`);
    keys.push(`k${key}`);
  }
  await db.pool.query(
    `insert into applications (id, uid, name) values ('app_ps', 'ps', 'ps');
     insert into endpoints (id, app_id, url)
       select 'ep_ps_' || g, 'app_ps', 'http://127.0.0.1:9/' || g from generate_series(0, ${ENDPOINTS - 1}) g;
     insert into endpoint_secrets (endpoint_id, secret)
       select e.id, 'whsec_' || e.id from endpoints e where e.app_id = 'app_ps'`,
  );
  await db.pool.query(
    `insert into messages (id, app_id, event_type, payload, ordering_key, message_ms)
     select id, 'app_ps', 't', '{}', k, hookrelay_message_ms(id)
     from unnest($1::text[], $2::text[]) as t(id, k)`,
    [ids, keys],
  );
  await db.pool.query(
    `insert into deliveries (message_id, endpoint_id, app_id, status, attempt_count, max_attempts,
                             next_attempt_at, ordering_key, message_ms)
     select id, ep, 'app_ps', 'pending', 0, 5, now() - interval '1 minute', k, hookrelay_message_ms(id)
     from unnest($1::text[], $2::text[], $3::text[]) with ordinality as t(id, ep, k, n)
     order by n`,
    [ids, endpoints, keys],
  );
}

/** Steps that read a whole table or index instead of probing it. */
function wholeReads(plan: string): string[] {
  return plan
    .split("\n")
    .filter((line) =>
      /Hash Cond|Merge Cond|Bitmap|Seq Scan on (deliveries|messages)|dead_letter_order_idx|updated_at_id_idx/.test(
        line,
      ),
    )
    .map((line) => line.trim());
}

test("a claim planned while deliveries were empty, or before any dead letter, probes indexes once they fill", async () => {
  // planned on the fresh database: every table empty, none analyzed (a worker started before
  // its backlog came)
  const onEmpty = await planNow();
  try {
    await seedBacklog();
    // and planned with the backlog's statistics, no dead letter among them
    await db.pool.query("analyze");
    const onBacklog = await planNow();
    try {
      for (const plan of [await onEmpty.explain(), await onBacklog.explain()]) {
        expect(wholeReads(plan), plan).toEqual([]);
        // the keys' heads: each found by a probe of the queued keys' index, each checked by
        // the backward probes of its key's queued and dead-lettered rows
        expect(plan).toMatch(
          /Index (Only )?Scan (Backward )?using deliveries_p\d+_endpoint_id_ordering_key_id_idx\d* on/,
        );
        expect(plan).toMatch(
          /Index (Only )?Scan Backward using deliveries_p\d+_endpoint_id_ordering_key_id_idx\d* on/,
        );
      }
    } finally {
      await onBacklog.end();
    }
  } finally {
    await onEmpty.end();
  }
  // and the claim takes each key's head, as before
  const claimed = await claimDeliveries(db.pool, options());
  expect(claimed).toHaveLength(ENDPOINTS * KEYS);
});
