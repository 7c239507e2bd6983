/**
 * The claim's periods (src/queue/claim-deliveries.ts, BOUNDS_SQL; docs/history.md, "The
 * claim's periods"): the claim's searches read the periods of deliveries from the floor's
 * to the one holding now + an hour, and no other; a queued row outside them (a message id
 * from an API clock days ahead, a row of the legacy partition, a row below the floor) makes
 * the claim read every period, so it is claimed at once and no later row of its ordering
 * key passes it. And an endpoint with few keys takes its heads by key without walking its
 * due rows first (src/queue/claim-pick.ts, KEYED_SQL). Then a worker delivers such rows to
 * a receiver, in key order.
 */

import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { Pool } from "../src/db/pool.ts";
import { withTransaction } from "../src/db/pool.ts";
import { raiseDeliveryFloor } from "../src/ops/delivery-floor.ts";
import { ensureMessagePartitions } from "../src/ops/message-partitions.ts";
import { CLAIM_SETTINGS, claimDeliveries } from "../src/queue/claim-deliveries.ts";
import {
  deliveryCalls,
  type ScriptedReceiver,
  startScriptedReceiver,
} from "./helpers/deliveries.ts";
import { type Harness, startHarness } from "./helpers/harness.ts";
import { setInFlight } from "./helpers/in-flight.ts";
import { messageIdAt as idAt } from "./helpers/message-ids.ts";
import { waitFor } from "./helpers/receiver.ts";

const DAY = 86_400_000;
const MIN = 60_000;
let serial = 0n;

/** A message id as an API process whose clock reads `ms` makes it (src/ids.ts's layout). */
function messageIdAt(ms: number): string {
  serial += 1n;
  return idAt(ms, serial);
}

let h: Harness;
let rx: ScriptedReceiver;
const { newApp, newEndpoint } = deliveryCalls(() => h);

beforeAll(async () => {
  rx = await startScriptedReceiver();
  h = await startHarness();
  // the periods of a running hookrelay: three days back to two days ahead
  await ensureMessagePartitions(
    h.db.pool,
    { interval: "day", aheadMs: 5 * DAY },
    30 * DAY,
    Date.now() - 3 * DAY,
  );
});
afterAll(async () => {
  await h?.close();
  await rx?.close();
});

interface Row {
  /** the API clock's time in the message id; 0: a row of the legacy partition */
  ms: number;
  key?: string;
  n: number;
}

/**
 * Messages with one delivery each to `endpointId`, due, written as the API writes them
 * (message_ms from the id), one after another: delivery ids follow the list's order.
 */
async function queue(pool: Pool, appId: string, endpointId: string, rows: Row[]) {
  const ids: number[] = [];
  for (const r of rows) {
    const id = messageIdAt(r.ms === 0 ? Date.now() : r.ms);
    const ms = r.ms === 0 ? "0" : "hookrelay_message_ms($1)";
    await pool.query(
      `insert into messages (id, app_id, event_type, payload, ordering_key, message_ms)
       values ($1, $2, 'e', $3, $4, ${ms})`,
      [id, appId, JSON.stringify({ n: r.n }), r.key ?? null],
    );
    const { rows: d } = await pool.query(
      `insert into deliveries (message_id, endpoint_id, app_id, max_attempts, next_attempt_at,
                               ordering_key, message_ms)
       values ($1, $2, $3, 5, now() - interval '1 second', $4, ${ms})
       returning id`,
      [id, endpointId, appId, r.key ?? null],
    );
    ids.push(Number(d[0].id));
  }
  return ids;
}

class RolledBack extends Error {}

/**
 * What a claim takes now (rolled back), and the index scans it made per partition of
 * deliveries (pg_stat_get_xact_numscans, read in its transaction), dead letters' aside.
 */
async function claimWithScans(): Promise<{ ids: number[]; scans: Record<string, number> }> {
  let ids: number[] = [];
  let scans: Record<string, number> = {};
  await withTransaction(h.db.pool, async (client) => {
    // the plan the worker runs (its generic plan, index probes: CLAIM_SETTINGS), whatever
    // this connection ran before: left to plan_cache_mode's default, a connection's sixth
    // run of the named claim may switch to a generic plan of another shape, with other
    // scan counts
    for (const [name, value] of Object.entries(CLAIM_SETTINGS))
      await client.query("select set_config($1, $2, true)", [name, value]);
    const rows = await claimDeliveries(client, {
      workerId: "periods-test",
      workerLock: null,
      claimToken: randomUUID(),
      limit: 1_000,
      defaultMaxInFlight: h.config.delivery.maxInFlight,
      defaultTimeoutMs: h.config.delivery.timeoutMs,
      leaseMarginMs: h.config.worker.leaseMarginMs,
    });
    ids = rows.map((r) => Number(r.id)).sort((a, b) => a - b);
    const stats = await client.query(
      `select t.relid::regclass::text as part, sum(pg_stat_get_xact_numscans(i.indexrelid))::int as n
       from pg_partition_tree('deliveries') t
       join pg_index i on i.indrelid = t.relid
       -- (not the dead letters' indexes: a head's probe for an earlier dead letter of its
       -- key reads every period, dead letters are no queued rows)
       where t.isleaf and coalesce(pg_get_expr(i.indpred, i.indrelid), '') not like '%dead_lettered%'
       group by 1`,
    );
    scans = Object.fromEntries(stats.rows.map((r) => [r.part, r.n]));
    throw new RolledBack();
  }).catch((err: unknown) => {
    if (!(err instanceof RolledBack)) throw err;
  });
  return { ids, scans };
}

/** The partition of deliveries for the day holding `ms`. */
const dayPartition = (ms: number) =>
  `deliveries_p${new Date(ms).toISOString().slice(0, 10).replaceAll("-", "")}`;

/** Marks every queued delivery done, so each test starts from an empty queue. */
async function clearQueue() {
  await h.db.pool.query(
    "update deliveries set status = 'delivered', lease_expires_at = null where queued",
  );
  await setInFlight(h.db.pool, null, 0);
}

describe("the claim's periods", () => {
  test("with every queued row in today's period, the claim's searches read no other period", async () => {
    await clearQueue();
    const appId = await newApp();
    const endpointId = await newEndpoint(appId, "http://127.0.0.1:9/periods");
    const now = Date.now();
    const ids = await queue(h.db.pool, appId, endpointId, [
      { ms: now, key: "a", n: 1 },
      { ms: now, key: "b", n: 2 },
      { ms: now, key: "c", n: 3 },
      { ms: now, key: "a", n: 4 },
      { ms: now, n: 5 },
    ]);
    await raiseDeliveryFloor(h.db.pool);
    const { ids: taken, scans } = await claimWithScans();
    expect(taken).toEqual([ids[0], ids[1], ids[2], ids[4]]);
    // the legacy partition's and those of periods two days or more from now (the claim's
    // periods are today's, and yesterday's or tomorrow's within an hour of midnight): one
    // probe at most each (whether it holds a queued row), where the claim read every
    // period for each key and each head before
    const others = ["deliveries_legacy", ...[-3, -2, 2].map((d) => dayPartition(now + d * DAY))];
    for (const part of others) expect(scans[part], JSON.stringify(scans)).toBeLessThanOrEqual(1);
    expect(scans[dayPartition(now)]).toBeGreaterThan(3);
  });

  test("rows whose message ids come from an API clock ahead of the database's are claimed at once", async () => {
    await clearQueue();
    const appId = await newApp();
    const endpointId = await newEndpoint(appId, "http://127.0.0.1:9/ahead");
    const now = Date.now();
    const ids = await queue(h.db.pool, appId, endpointId, [
      // within the claim's hour ahead
      { ms: now + 30 * MIN, n: 1 },
      // past it, in a period made ahead of time
      { ms: now + DAY + 6 * 3_600_000, n: 2 },
      // past every period: the default partition
      { ms: now + 5 * DAY, n: 3 },
      // keyed: the later row of the key is now's, it must wait for the earlier one
      { ms: now + 5 * DAY, key: "k", n: 4 },
      { ms: now, key: "k", n: 5 },
    ]);
    const { ids: taken } = await claimWithScans();
    expect(taken).toEqual([ids[0], ids[1], ids[2], ids[3]]);
  });

  test("a row of the legacy partition or below the floor is claimed at once, and its key's later rows wait for it", async () => {
    await clearQueue();
    const appId = await newApp();
    const endpointId = await newEndpoint(appId, "http://127.0.0.1:9/behind");
    const now = Date.now();
    const [first] = await queue(h.db.pool, appId, endpointId, [{ ms: now, n: 0 }]);
    // the floor at today's period (or an hour before now)
    await raiseDeliveryFloor(h.db.pool);
    const ids = await queue(h.db.pool, appId, endpointId, [
      // written before the layout (or by an older hookrelay): message_ms 0
      { ms: 0, key: "legacy", n: 1 },
      { ms: now, key: "legacy", n: 2 },
      // an API clock two days behind: below the floor, which nothing lowered
      { ms: now - 2 * DAY, key: "behind", n: 3 },
      { ms: now, key: "behind", n: 4 },
    ]);
    const { ids: taken } = await claimWithScans();
    expect(taken).toEqual([first, ids[0], ids[2]]);
  });

  test("an endpoint with few deep keys takes each key's head", async () => {
    await clearQueue();
    const appId = await newApp();
    const endpointId = await newEndpoint(appId, "http://127.0.0.1:9/deep");
    const now = Date.now();
    const rows: Row[] = [];
    for (let i = 0; i < 120; i++) rows.push({ ms: now, key: `k${i % 3}`, n: i });
    const ids = await queue(h.db.pool, appId, endpointId, rows);
    const { ids: taken, scans } = await claimWithScans();
    expect(taken).toEqual([ids[0], ids[1], ids[2]]);
    // (the index scans it made are not asserted: their count is not explained yet, see
    // docs/history.md, "Left to do": 34 of today's partition at 17:44 UTC on 6 Dec, 17 at
    // 20:30, and in a CI run at 21:05 49 of today's and 18-22 of each other period, 14 and
    // 8 with this test run alone)
    expect(Object.keys(scans).length).toBeGreaterThan(0);
  });
});

describe("a worker", () => {
  test("delivers rows from an API clock days ahead, from the legacy partition and from below the floor, each key in order", async () => {
    await clearQueue();
    const path = rx.route();
    const appId = await newApp();
    const endpointId = await newEndpoint(appId, `${rx.url}${path}`);
    const now = Date.now();
    await raiseDeliveryFloor(h.db.pool);
    await queue(h.db.pool, appId, endpointId, [
      { ms: now + 5 * DAY, key: "a", n: 1 },
      { ms: now, key: "a", n: 2 },
      { ms: 0, key: "b", n: 3 },
      { ms: now, key: "b", n: 4 },
      { ms: now - 2 * DAY, key: "c", n: 5 },
      { ms: now, key: "c", n: 6 },
      { ms: now + 2 * 3_600_000, n: 7 },
    ]);
    h.startWorker();
    await waitFor(() => rx.on(path).length === 7);
    const order = rx.on(path).map((r) => JSON.parse(r.body).n as number);
    expect([...order].sort((a, b) => a - b)).toEqual([1, 2, 3, 4, 5, 6, 7]);
    for (const [first, then] of [
      [1, 2],
      [3, 4],
      [5, 6],
    ] as const)
      expect(order.indexOf(first)).toBeLessThan(order.indexOf(then));
  });
});
