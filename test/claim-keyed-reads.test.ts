/**
 * What the ordered claim reads per key (src/queue/claim-pick.ts; docs/performance.md, "The
 * ordered claim alone"): an endpoint whose keys' heads are all in flight but one reads the
 * heads in flight once, in its walk of the keys, and reads again by id (to lock it) only
 * the head it may take. Counted as index scans (pg_stat_get_xact_numscans) of today's
 * period of deliveries, before and after one claim in a transaction rolled back, with the
 * worker's settings (CLAIM_SETTINGS) and its plan built beforehand; nothing depends on
 * timing.
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, expect, test } from "vitest";
import { withTransaction } from "../src/db/pool.ts";
import { ID_PREFIX, newId } from "../src/ids.ts";
import { ensureMessagePartitions } from "../src/ops/message-partitions.ts";
import { CLAIM_SETTINGS, claimDeliveries } from "../src/queue/claim-deliveries.ts";
import { createTestDb, type TestDb } from "./helpers/db.ts";

const DAY = 86_400_000;
const KEYS = 10;
const DEPTH = 3;

let db: TestDb;
beforeAll(async () => {
  db = await createTestDb();
  await ensureMessagePartitions(
    db.pool,
    { interval: "day", aheadMs: 2 * DAY },
    30 * DAY,
    Date.now() - DAY,
  );
});
afterAll(async () => {
  await db?.drop();
});

const options = () => ({
  workerId: "keyed-reads",
  workerLock: null,
  claimToken: randomUUID(),
  limit: 256,
  defaultMaxInFlight: 20,
  defaultTimeoutMs: 15_000,
  leaseMarginMs: 5_000,
});

/** One endpoint, KEYS keys DEPTH messages deep, due now, in acceptance order. */
async function seed(): Promise<void> {
  const ids: string[] = [];
  const keys: string[] = [];
  for (let i = 0; i < KEYS * DEPTH; i++) {
    ids.push(newId(ID_PREFIX.message));
    keys.push(`k${i % KEYS}`);
  }
  await db.pool.query(
    `insert into applications (id, uid, name) values ('app_kr', 'kr', 'kr');
     insert into endpoints (id, app_id, url) values ('ep_kr', 'app_kr', 'http://127.0.0.1:9/kr');
     insert into endpoint_secrets (endpoint_id, secret) values ('ep_kr', 'whsec_kr')`,
  );
  await db.pool.query(
    `insert into messages (id, app_id, event_type, payload, ordering_key, message_ms)
     select id, 'app_kr', 't', '{}', k, hookrelay_message_ms(id)
     from unnest($1::text[], $2::text[]) as t(id, k)`,
    [ids, keys],
  );
  await db.pool.query(
    `insert into deliveries (message_id, endpoint_id, app_id, status, attempt_count, max_attempts,
                             next_attempt_at, ordering_key, message_ms)
     select id, 'ep_kr', 'app_kr', 'pending', 0, 5, now() - interval '1 minute', k, hookrelay_message_ms(id)
     from unnest($1::text[], $2::text[]) with ordinality as t(id, k, n)
     order by n`,
    [ids, keys],
  );
}

/** Index scans per index of today's period of deliveries so far in this backend. */
const SCANS_SQL = `
  select i.indexrelid::regclass::text as name, pg_get_indexdef(i.indexrelid) as def,
         pg_stat_get_xact_numscans(i.indexrelid)::int as n
  from pg_partition_tree('deliveries') t join pg_index i on i.indrelid = t.relid
  where t.isleaf and t.relid::regclass::text = $1::text`;

class RolledBack extends Error {}

/** One claim with the worker's settings, rolled back: its rows and index scans by index. */
async function claimCountingScans(): Promise<{ taken: number; scans: Map<string, number> }> {
  const today = `deliveries_p${new Date().toISOString().slice(0, 10).replaceAll("-", "")}`;
  let taken = 0;
  const scans = new Map<string, number>();
  await withTransaction(db.pool, async (client) => {
    for (const [name, value] of Object.entries(CLAIM_SETTINGS))
      await client.query("select set_config($1, $2, true)", [name, value]);
    const before = await client.query(SCANS_SQL, [today]);
    taken = (await claimDeliveries(client, options())).length;
    const after = await client.query(SCANS_SQL, [today]);
    for (const row of after.rows) {
      const was = before.rows.find((b) => b.name === row.name)?.n ?? 0;
      scans.set(row.def.replace(/^.* USING btree /, ""), row.n - was);
    }
    throw new RolledBack();
  }).catch((err: unknown) => {
    if (!(err instanceof RolledBack)) throw err;
  });
  return { taken, scans };
}

test("an endpoint with every key's head in flight but one reads the others' heads once", async () => {
  await seed();
  // every key's head in flight, as a worker holds them
  expect(await claimDeliveries(db.pool, options())).toHaveLength(KEYS);
  // then one head delivered: its key's next row is the one head free
  await db.pool.query(
    `with d as (
       update deliveries set status = 'delivered', claim_token = null, claimed_by = null,
              lease_expires_at = null
       where id = (select min(id) from deliveries where status = 'in_flight')
       returning endpoint_id)
     update endpoint_health h set released = h.released + 1 from d where d.endpoint_id = h.endpoint_id`,
  );
  // (a first claim builds the plan on the pool's connections; the counts are of the second)
  await claimCountingScans();
  const { taken, scans } = await claimCountingScans();
  expect(taken).toBe(1);
  const byId = [...scans].filter(([def]) => /^\(id\)/.test(def));
  expect(byId, JSON.stringify([...scans])).toHaveLength(1);
  // by id: the free head, read again to lock it, and its update (the claimed step): not the
  // nine heads in flight
  expect(byId[0]?.[1], JSON.stringify([...scans])).toBeLessThanOrEqual(2);
});
