/**
 * Claims rewrite their rows in place in every partition of deliveries (migration 0007's
 * HOT claims, kept by migration 0043 and src/ops/message-partitions.ts): each partition
 * keeps a fifth of its pages free, room for the new versions of about one row in five of a
 * page. A claim of rows written page after page (as a burst of messages writes them) fills
 * that room, and its other rows get new index entries. Made without the room, today's
 * period filled its pages to the brim and a claim rewrote none in place: a new entry in
 * five indexes for every row it took.
 */
import { afterAll, beforeAll, expect, test } from "vitest";
import { withTransaction } from "../src/db/pool.ts";
import { ensureMessagePartitions } from "../src/ops/message-partitions.ts";
import { CLAIM_SETTINGS, claimDeliveries } from "../src/queue/claim-deliveries.ts";
import { claimOptions } from "./helpers/claimable.ts";
import { deliveryCalls } from "./helpers/deliveries.ts";
import { type Harness, startHarness } from "./helpers/harness.ts";
import { messageIdAt } from "./helpers/message-ids.ts";

const DAY = 86_400_000;
const ROWS = 3_000;

let h: Harness;
const { newApp, newEndpoint } = deliveryCalls(() => h);

beforeAll(async () => {
  h = await startHarness();
  await ensureMessagePartitions(h.db.pool, { interval: "day", aheadMs: DAY }, 30 * DAY, Date.now());
});
afterAll(async () => {
  await h?.close();
});

test("every partition of deliveries keeps a fifth of its pages free", async () => {
  const { rows } = await h.db.pool.query<{ part: string; options: string[] | null }>(
    `select t.relid::regclass::text as part, c.reloptions as options
     from pg_partition_tree('deliveries') t join pg_class c on c.oid = t.relid
     where t.isleaf order by 1`,
  );
  // legacy, default and at least today's and tomorrow's periods
  expect(rows.length).toBeGreaterThanOrEqual(4);
  for (const r of rows) expect(r.options, r.part).toContain("fillfactor=80");
});

test("a claim of a burst's rows in today's period rewrites as many in place as the pages have room for", async () => {
  const appId = await newApp();
  const endpointId = await newEndpoint(appId, "http://127.0.0.1:9/", { maxInFlight: 1000 });
  const now = Date.now();
  const ids = Array.from({ length: ROWS }, (_, i) => messageIdAt(now, BigInt(i + 1)));
  await h.db.pool.query(
    `with m as (
       insert into messages (id, app_id, event_type, payload, message_ms)
       select id, $2, 'e', '{"n": 1}', hookrelay_message_ms(id) from unnest($1::text[]) as id
       returning id, message_ms)
     insert into deliveries (message_id, endpoint_id, app_id, max_attempts, next_attempt_at, message_ms)
     select id, $3, $2, 5, now() - interval '1 second', message_ms from m`,
    [ids, appId, endpointId],
  );
  const { rows: pages } = await h.db.pool.query(
    `select pg_relation_size(t.relid) / current_setting('block_size')::int as pages
     from pg_partition_tree('deliveries') t join deliveries d on d.tableoid = t.relid
     where d.endpoint_id = $1 group by t.relid`,
    [endpointId],
  );
  // one period holds them, over many pages
  expect(pages).toHaveLength(1);
  expect(Number(pages[0].pages)).toBeGreaterThan(20);

  const stats = await withTransaction(h.db.pool, async (client) => {
    for (const [name, value] of Object.entries(CLAIM_SETTINGS))
      await client.query("select set_config($1, $2, true)", [name, value]);
    const claimed = await claimDeliveries(client, claimOptions(h, "hot-test"));
    expect(claimed).toHaveLength(1_000);
    const { rows } = await client.query(
      `select sum(pg_stat_get_xact_tuples_updated(relid))::int as updated,
              sum(pg_stat_get_xact_tuples_hot_updated(relid))::int as in_place
       from pg_partition_tree('deliveries') where isleaf`,
    );
    return rows[0];
  });
  expect(stats.updated).toBe(1_000);
  // 217 here: each page's free fifth holds the new versions of about a fifth of its rows
  expect(stats.in_place).toBeGreaterThanOrEqual(150);
});
