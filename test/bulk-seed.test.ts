/**
 * The bulk load of large fixtures (test/helpers/bulk-seed.ts): the rows it inserts are
 * there and found through the indexes it built again, the schema's indexes are as before
 * (the partitioned attempts table's included), and a table with triggers of its own is
 * refused, since the load would skip them.
 */
import { afterAll, beforeAll, expect, test } from "vitest";
import { bulkSeed } from "./helpers/bulk-seed.ts";
import { type Harness, startHarness } from "./helpers/harness.ts";
import { newApp } from "./helpers/seeded-deliveries.ts";

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(() => h?.close());

const indexCount = async () =>
  (
    await h.db.pool.query(
      "select count(*)::int as n from pg_index i join pg_class c on c.oid = i.indexrelid where c.relnamespace = 'public'::regnamespace",
    )
  ).rows[0].n as number;

test("the rows go in, the indexes come back the same and are used", async () => {
  const appId = await newApp(h);
  const before = await indexCount();
  await bulkSeed(h.db.pool, ["messages", "attempts"], async (db) => {
    await db.query(
      `insert into messages (id, app_id, event_type, payload)
       select 'msg_bulk' || g, $1::text, 'bulk', '{}' from generate_series(1, 1000) g`,
      [appId],
    );
  });
  expect(await indexCount()).toBe(before);
  const { rows } = await h.db.pool.query(
    "select count(*)::int as n from messages where app_id = $1",
    [appId],
  );
  expect(rows[0].n).toBe(1000);
  const plan = await h.db.pool.query(
    "explain (costs off) select id from messages where app_id = $1 order by id desc limit 5",
    [appId],
  );
  expect(plan.rows.map((r) => r["QUERY PLAN"]).join("\n")).toMatch(/Index/);
});

test("a table with triggers of its own is refused, and nothing is changed", async () => {
  const before = await indexCount();
  await expect(bulkSeed(h.db.pool, ["endpoints"], async () => undefined)).rejects.toThrow(
    /endpoints_health_row.* would not fire/,
  );
  expect(await indexCount()).toBe(before);
});
