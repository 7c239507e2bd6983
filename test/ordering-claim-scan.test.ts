/**
 * The index entries a claim reads (src/queue/claim-deliveries.ts):
 *
 * - it finds an endpoint's key heads one probe per key (PICK_SQL; docs/delivery.md,
 *   "Ordering"), instead of walking every due row and probing its key for each: over a
 *   backlog of 2,000 rows on three keys it takes exactly the claimable heads and the
 *   unordered rows, and the entries it reads stay a handful, whatever the backlog's depth;
 * - its check that an endpoint has a due row not in flight reads from the latest due time
 *   down, so the rows in flight (the oldest due) are stepped over once, by the pick, not
 *   twice.
 *
 * The counts are the claim's own, read in its transaction (pg_stat_get_xact_tuples_returned),
 * so nothing here depends on timing.
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, expect, test } from "vitest";
import type { LocalSettings } from "../src/db/local-settings.ts";
import { withTransaction } from "../src/db/pool.ts";
import { ensureMessagePartitions } from "../src/ops/message-partitions.ts";
import { CLAIM_SETTINGS, claimDeliveries } from "../src/queue/claim-deliveries.ts";
import { type Harness, startHarness } from "./helpers/harness.ts";
import { ago, DAY, newApp, newEndpoint, type SeedRow, seed } from "./helpers/seeded-deliveries.ts";

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h?.close();
});

class RolledBack extends Error {}

/** What a claim takes now, and the entries it read from the deliveries' indexes. */
async function claimWithScans(
  limit = 1_000,
  settings: LocalSettings = {},
): Promise<{ ids: number[]; read: Record<string, number> }> {
  let ids: number[] = [];
  let read: Record<string, number> = {};
  await withTransaction(h.db.pool, async (client) => {
    for (const [name, value] of Object.entries(settings))
      await client.query("select set_config($1, $2, true)", [name, value]);
    const rows = await claimDeliveries(client, {
      workerId: "scan-test",
      workerLock: null,
      claimToken: randomUUID(),
      limit,
      defaultMaxInFlight: h.config.delivery.maxInFlight,
      defaultTimeoutMs: h.config.delivery.timeoutMs,
      leaseMarginMs: h.config.worker.leaseMarginMs,
    });
    ids = rows.map((r) => Number(r.id)).sort((a, b) => a - b);
    const stats = await client.query(
      // every index of every partition of deliveries (docs/history.md)
      `select c.relname, pg_stat_get_xact_tuples_returned(c.oid) as n
       from pg_partition_tree('deliveries') t
       join pg_index i on i.indrelid = t.relid
       join pg_class c on c.oid = i.indexrelid
       where t.isleaf`,
    );
    read = Object.fromEntries(stats.rows.map((r) => [r.relname, Number(r.n)]));
    throw new RolledBack();
  }).catch((err: unknown) => {
    if (!(err instanceof RolledBack)) throw err;
  });
  return { ids, read };
}

test("a claim takes each key's head and the unordered rows, reading a handful of index entries under a 2,000-row backlog", async () => {
  const appId = await newApp(h);
  const { id: endpointId } = await newEndpoint(h, appId);
  const due = ago(60_000);
  // keys a and b take turns for 2,000 rows: a's head is in flight, b's head is due; key c's
  // head is dead-lettered (the endpoint blocks on it by default); then 3 unordered rows
  const keyed: { key: string; row: SeedRow }[] = [];
  for (let i = 0; i < 2_000; i++) {
    const key = i % 2 === 0 ? "a" : "b";
    keyed.push({
      key,
      row: { endpointId, status: i === 0 ? "in_flight" : "pending", createdAt: due },
    });
  }
  keyed.push({ key: "c", row: { endpointId, status: "dead_letter", createdAt: due } });
  keyed.push({ key: "c", row: { endpointId, status: "pending", createdAt: due } });
  const seeded = await seed(
    h.db.pool,
    keyed.map((k) => k.row),
  );
  const unordered = await seed(
    h.db.pool,
    [1, 2, 3].map(() => ({ endpointId, status: "pending" as const, createdAt: ago(30_000) })),
  );
  await h.db.pool.query(
    `update deliveries d set ordering_key = k.key
     from unnest($1::bigint[], $2::text[]) as k(id, key) where d.id = k.id`,
    [seeded.map((s) => s.deliveryId), keyed.map((k) => k.key)],
  );
  // the rows were written unordered first: clear their old entries from the unordered
  // index (the fan-out writes a row's key with the row) and give the planner the table's
  // statistics, as autovacuum would
  await h.db.pool.query("vacuum analyze deliveries");

  const { ids, read } = await claimWithScans();

  const bHead = seeded[1]?.deliveryId;
  expect(ids).toEqual([Number(bHead), ...unordered.map((u) => Number(u.deliveryId))]);
  // every entry the claim read from the deliveries' indexes: a few per key and a walk of
  // at most in_flight + 2 x room due rows, against about 2,000 when the claim walked every
  // due row of the endpoint (one per row behind a head)
  const total = Object.values(read).reduce((sum, n) => sum + n, 0);
  expect(total, JSON.stringify(read)).toBeLessThan(200);
});

test("the check for a due row not in flight does not step over the rows in flight", async () => {
  const appId = await newApp(h);
  const { id: endpointId } = await newEndpoint(h, appId, { maxInFlight: 1_000 });
  // (the other test's rows out of the way: they are still due, before the periods)
  await h.db.pool.query(
    "update deliveries set status = 'canceled', lease_expires_at = null where queued and endpoint_id <> $1",
    [endpointId],
  );
  // today's periods, as a running hookrelay keeps them (the rows below go there)
  await ensureMessagePartitions(h.db.pool, { interval: "day", aheadMs: DAY }, 2 * DAY);
  // 300 rows in flight, claimed oldest first and listed at the due times they were claimed
  // at, then 20 due rows behind them
  const inFlight = await seed(
    h.db.pool,
    Array.from({ length: 300 }, (_, i) => ({
      endpointId,
      status: "in_flight" as const,
      createdAt: ago(600_000 - i),
      nextAttemptAt: ago(600_000 - i),
    })),
    { inPeriods: true },
  );
  const due = await seed(
    h.db.pool,
    Array.from({ length: 20 }, (_, i) => ({
      endpointId,
      status: "pending" as const,
      createdAt: ago(60_000 - i),
    })),
    { inPeriods: true },
  );
  await h.db.pool.query("vacuum analyze deliveries");

  // (with the worker's settings: its generic plan, index probes only)
  const { ids, read } = await claimWithScans(5, CLAIM_SETTINGS);

  // the five oldest due rows
  expect(ids).toEqual(due.slice(0, 5).map((d) => Number(d.deliveryId)));
  // the pick steps over the 300 rows in flight to reach them; the check found a due row at
  // its first entry. Read from the oldest up, the check stepped over the 300 as well (more
  // than 600 entries in all)
  const total = Object.values(read).reduce((sum, n) => sum + n, 0);
  expect(total, JSON.stringify(read)).toBeGreaterThanOrEqual(inFlight.length);
  expect(total, JSON.stringify(read)).toBeLessThan(inFlight.length + 100);
});
