/**
 * Messages and deliveries partitioned by message_ms (migrations 0034-0036, docs/history.md,
 * "Messages and deliveries"): the key is the millisecond a message's id carries, the same
 * on its deliveries; the old tables become the legacy partitions without a scan, while
 * messages and deliveries are written, losing none; a row written without the key (an
 * older hookrelay during the upgrade) lands in the legacy partition; uniqueness holds per
 * partition and `on conflict do nothing` uses it.
 *
 * HOOKRELAY_TEST_HISTORY_ROWS sets the seeded messages (default 5,000, each with two
 * deliveries; 10,000,000 was measured by hand, docs/history.md).
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { loadMigrations, migrate } from "../src/db/migrate.ts";
import { ID_PREFIX, idTimeMs, newId } from "../src/ids.ts";
import { partitionName } from "../src/ops/attempt-partitions.ts";
import { ensureMessagePartitions } from "../src/ops/message-partitions.ts";
import { writeMessages } from "../src/queue/enqueue-message.ts";
import { createTestDb, type TestDb } from "./helpers/db.ts";

const ROWS = Number(process.env.HOOKRELAY_TEST_HISTORY_ROWS ?? 5_000);
const DAY = 86_400_000;

let db: TestDb;
let dir: string;
beforeAll(async () => {
  db = await createTestDb({ template: false });
  dir = await mkdtemp(path.join(tmpdir(), "hookrelay-old-messages-"));
  for (const m of (await loadMigrations()).filter((m) => m.id < 34))
    await writeFile(path.join(dir, m.name), m.sql);
});
afterAll(async () => {
  await db?.drop();
  await rm(dir, { recursive: true, force: true });
});

const partitionsOf = async (table: string) =>
  (
    await db.pool.query(
      `select c.relname as name, pg_get_expr(c.relpartbound, c.oid) as bound
       from pg_inherits i join pg_class c on c.oid = i.inhrelid
       where i.inhparent = $1::regclass order by 1`,
      [table],
    )
  ).rows;

const indexCount = async (table: string) =>
  Number(
    (
      await db.pool.query("select count(*) as n from pg_index where indrelid = $1::regclass", [
        table,
      ])
    ).rows[0].n,
  );

describe("migrating to partitioned messages and deliveries", () => {
  test(`${ROWS} messages with their deliveries in the old layout migrate while messages are written, losing none`, async () => {
    const pool = db.pool;
    await migrate(pool, { migrationsDir: dir });
    const seedStart = performance.now();
    await pool.query(
      `insert into applications (id, name) values ('app_1', 'one');
       insert into endpoints (id, app_id, url) values ('ep_1', 'app_1', 'http://127.0.0.1:9/'),
                                                      ('ep_2', 'app_1', 'http://127.0.0.1:9/');`,
    );
    await pool.query(
      `insert into messages (id, app_id, event_type, payload, event_id)
       select 'msg_old_' || g, 'app_1', 'e', '{}', case when g % 2 = 0 then 'ev-' || g end
       from generate_series(1, $1::int) g`,
      [ROWS],
    );
    await pool.query(
      `insert into deliveries (message_id, endpoint_id, app_id, max_attempts, status)
       select 'msg_old_' || g, e, 'app_1', 5, case when g % 3 = 0 then 'pending' else 'delivered' end
       from generate_series(1, $1::int) g, unnest(array['ep_1', 'ep_2']) e`,
      [ROWS],
    );
    await pool.query("analyze messages; analyze deliveries");
    console.log(
      `seeded ${ROWS} messages and ${2 * ROWS} deliveries in ${(performance.now() - seedStart).toFixed(0)} ms`,
    );
    const before = {
      messages: await indexCount("messages"),
      deliveries: await indexCount("deliveries"),
    };

    // an older hookrelay's writer keeps enqueueing meanwhile (no message_ms column)
    let writing = true;
    let written = 0;
    let slowestMs = 0;
    const errors: unknown[] = [];
    const writer = (async () => {
      while (writing) {
        const id = newId(ID_PREFIX.message);
        const t = performance.now();
        try {
          await pool.query(
            `with m as (insert into messages (id, app_id, event_type, payload) values ($1, 'app_1', 'e', '{}')
                        returning id)
             insert into deliveries (message_id, endpoint_id, app_id, max_attempts)
             select m.id, 'ep_1', 'app_1', 5 from m`,
            [id],
          );
          written++;
        } catch (err) {
          errors.push(err);
        }
        slowestMs = Math.max(slowestMs, performance.now() - t);
        await new Promise((r) => setTimeout(r, 2));
      }
    })();
    while (written < 10) await new Promise((r) => setTimeout(r, 5));
    const t0 = performance.now();
    const applied = await migrate(pool);
    const migrateMs = performance.now() - t0;
    const after = written;
    while (written < after + 10) await new Promise((r) => setTimeout(r, 5));
    writing = false;
    await writer;
    console.log(
      `migrated ${ROWS} messages (${applied.join(", ")}) in ${migrateMs.toFixed(0)} ms while ${written} messages were written; slowest write ${slowestMs.toFixed(0)} ms`,
    );
    expect(applied).toEqual(expect.arrayContaining(["0036_messages_partitioned.sql"]));
    expect(errors).toEqual([]);

    expect(await partitionsOf("messages")).toEqual([
      { name: "messages_default", bound: "DEFAULT" },
      { name: "messages_legacy", bound: "FOR VALUES FROM (MINVALUE) TO ('1')" },
    ]);
    expect(await partitionsOf("deliveries")).toEqual([
      { name: "deliveries_default", bound: "DEFAULT" },
      { name: "deliveries_legacy", bound: "FOR VALUES FROM (MINVALUE) TO ('1')" },
    ]);
    // attached as they were: no index built on the old tables
    expect(await indexCount("messages_legacy")).toBe(before.messages);
    expect(await indexCount("deliveries_legacy")).toBe(before.deliveries);
    const { rows } = await pool.query(
      `select (select count(*)::int from messages_legacy) as messages,
              (select count(*)::int from deliveries_legacy) as deliveries,
              (select count(*)::int from messages where id like 'msg_old_%') as old,
              (select count(*)::int from message_event_ids) as event_ids,
              (select count(*)::int from messages_default) as in_default`,
    );
    expect(rows[0]).toEqual({
      messages: ROWS + written,
      deliveries: 2 * ROWS + written,
      old: ROWS,
      event_ids: ROWS / 2,
      in_default: 0,
    });

    // this version's rows carry their key and land in the default partition (no period yet)
    const [one] = (await writeMessages(
      pool,
      [{ appId: "app_1", eventType: "e", payload: "{}" }],
      5,
    )) as Array<{
      messageId: string;
    }>;
    const { rows: placed } = await pool.query(
      `select tableoid::regclass::text as p, message_ms::text as ms from messages where id = $1
       union all
       select tableoid::regclass::text, message_ms::text from deliveries where message_id = $1`,
      [one!.messageId],
    );
    const ms = String(idTimeMs(one!.messageId, ID_PREFIX.message));
    expect(placed).toEqual([
      { p: "messages_default", ms },
      { p: "deliveries_default", ms },
      { p: "deliveries_default", ms },
    ]);
    // the delivery ids go on from the old ones
    const { rows: ids } = await pool.query(
      "select max(id) filter (where message_ms = 0) as old, min(id) filter (where message_ms > 0) as new from deliveries",
    );
    expect(Number(ids[0].new)).toBeGreaterThan(Number(ids[0].old));

    // the first creation of periods (at start, or the maintenance task) moves this version's
    // rows out of the default partitions into their period; the legacy rows stay as they are
    const created = await ensureMessagePartitions(pool, { interval: "day", aheadMs: 0 }, DAY);
    const day = partitionName(Number(ms) - (Number(ms) % DAY), "day", "messages");
    expect(created).toEqual(expect.arrayContaining([day, day.replace("messages", "deliveries")]));
    const { rows: moved } = await pool.query(
      `select (select count(*)::int from messages_default) as messages_default,
              (select count(*)::int from deliveries_default) as deliveries_default,
              (select count(*)::int from messages_legacy) as messages_legacy,
              (select count(*)::int from ${day} where id = $1) as in_period`,
      [one!.messageId],
    );
    expect(moved[0]).toEqual({
      messages_default: 0,
      deliveries_default: 0,
      messages_legacy: ROWS + written,
      in_period: 1,
    });
  });

  test("a message's (message_id, endpoint_id) stays unique in its partition; on conflict do nothing steps over it", async () => {
    const pool = db.pool;
    const { rows } = await pool.query(
      "select message_id, message_ms from deliveries where message_ms > 0 limit 1",
    );
    const { message_id: id, message_ms: ms } = rows[0];
    await expect(
      pool.query(
        "insert into deliveries (message_id, endpoint_id, app_id, max_attempts, message_ms) values ($1, 'ep_1', 'app_1', 5, $2)",
        [id, ms],
      ),
    ).rejects.toMatchObject({ code: "23505" });
    const { rowCount } = await pool.query(
      "insert into deliveries (message_id, endpoint_id, app_id, max_attempts, message_ms) values ($1, 'ep_1', 'app_1', 5, $2) on conflict do nothing",
      [id, ms],
    );
    expect(rowCount).toBe(0);
  });

  test("hookrelay_message_ms reads the millisecond an id carries, as idTimeMs does; 0 for another shape", async () => {
    const ids = [
      newId(ID_PREFIX.message),
      "msg_0000000000000000000000",
      "msg_zzzzzzzzzzzzzzzzzzzzzz",
    ];
    const { rows } = await db.pool.query(
      "select hookrelay_message_ms(id)::text as ms from unnest($1::text[]) with ordinality as u(id, n) order by n",
      [[...ids, "msg_old_1", "ep_x"]],
    );
    expect(rows.map((r) => r.ms)).toEqual([
      ...ids.map((id) => String(idTimeMs(id, ID_PREFIX.message))),
      "0",
      "0",
    ]);
  });
});
