/**
 * The periods of messages and deliveries (docs/history.md, "Messages and deliveries";
 * src/ops/message-partitions.ts): created ahead for both tables together, taking over the
 * rows waiting in the default partitions; dropped by retention with their backlog (queued,
 * retrying, in flight, dead letters within their age) copied into the default partitions,
 * while a worker claims and writes results, losing nothing and orphaning no delivery.
 */
import pino from "pino";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { PartitionConfig, RetentionConfig } from "../src/config.ts";
import type { Pool } from "../src/db/pool.ts";
import { makeHttpSender } from "../src/delivery/http-sender.ts";
import { listPartitions, partitionName } from "../src/ops/attempt-partitions.ts";
import {
  dropMessagePartitionsBefore,
  ensureMessagePartitions,
} from "../src/ops/message-partitions.ts";
import { purgeExpiredUntil } from "../src/ops/retention.ts";
import { writeMessages } from "../src/queue/enqueue-message.ts";
import { makeRedactor } from "../src/security/redact.ts";
import { makeSecretBox } from "../src/security/secret-box.ts";
import { makeSsrfGuard } from "../src/security/ssrf-guard.ts";
import { makeWorker } from "../src/worker/worker.ts";
import { createTestDb, type TestDb } from "./helpers/db.ts";
import { type Harness, startHarness } from "./helpers/harness.ts";
import { linesInto } from "./helpers/log-lines.ts";
import { type Receiver, startReceiver, waitFor } from "./helpers/receiver.ts";

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const DAILY: PartitionConfig = { interval: "day", aheadMs: 2 * DAY };
const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
let serial = 0n;

/** A message id carrying `ms`, as src/ids.ts makes them (newId never goes back in time). */
function messageIdAt(ms: number): string {
  serial += 1n;
  let v = (BigInt(ms) << 80n) | (0x5eedn << 40n) | serial;
  let out = "";
  for (let i = 0; i < 22; i++) {
    out = BASE62[Number(v % 62n)] + out;
    v /= 62n;
  }
  return `msg_${out}`;
}

/** A message made at `ms` with one delivery per [endpoint, status, extra columns]. */
async function messageAt(
  pool: Pool,
  ms: number,
  deliveries: Array<[string, string, Record<string, unknown>?]>,
  appId = "app_p",
): Promise<string> {
  const id = messageIdAt(ms);
  await pool.query(
    `insert into messages (id, app_id, event_type, payload, message_ms, created_at)
     values ($1, $2, 'e', '{}', hookrelay_message_ms($1), $3)`,
    [id, appId, new Date(ms)],
  );
  for (const [endpoint, status, extra = {}] of deliveries)
    await pool.query(
      `insert into deliveries (message_id, endpoint_id, app_id, status, max_attempts, message_ms,
                               created_at, updated_at, claim_token, lease_expires_at)
       values ($1, $2, $3, $4, 5, hookrelay_message_ms($1), $5, coalesce($6::timestamptz, $5),
               $7::uuid, $8::timestamptz)`,
      [
        id,
        endpoint,
        appId,
        status,
        new Date(ms),
        extra.updatedAt ?? null,
        extra.token ?? null,
        extra.lease ?? null,
      ],
    );
  return id;
}

const placeOf = async (pool: Pool, id: string) =>
  (
    await pool.query(
      `select tableoid::regclass::text as p from messages where id = $1
       union all
       select tableoid::regclass::text from deliveries where message_id = $1`,
      [id],
    )
  ).rows.map((r) => r.p as string);

const orphans = async (pool: Pool) =>
  (
    await pool.query(
      `select count(*)::int as n from deliveries d
       where not exists (select 1 from messages m where m.id = d.message_id)`,
    )
  ).rows[0].n as number;

const dayStart = (ms: number) => ms - (ms % DAY);

describe("periods of messages and deliveries", () => {
  let db: TestDb;
  beforeAll(async () => {
    db = await createTestDb();
    await db.pool.query(`
      insert into applications (id, name) values ('app_p', 'p');
      insert into endpoints (id, app_id, url) values ('ep_p1', 'app_p', 'http://127.0.0.1:9/a'),
                                                     ('ep_p2', 'app_p', 'http://127.0.0.1:9/b');`);
  });
  afterAll(() => db?.drop());

  test("rows without their period wait in the default partitions; creating the period moves a message and its deliveries into it together", async () => {
    const pool = db.pool;
    expect((await listPartitions(pool, "messages")).map((p) => p.name)).toEqual([
      "messages_legacy",
    ]);
    const [now] = (await writeMessages(
      pool,
      [{ appId: "app_p", eventType: "e", payload: "{}" }],
      5,
    )) as Array<{ messageId: string }>;
    const fiveDays = await messageAt(pool, Date.now() - 5 * DAY, [["ep_p1", "pending"]]);
    const fortyDays = await messageAt(pool, Date.now() - 40 * DAY, [["ep_p1", "delivered"]]);
    expect(await placeOf(pool, now!.messageId)).toEqual([
      "messages_default",
      "deliveries_default",
      "deliveries_default",
    ]);

    const created = await ensureMessagePartitions(pool, DAILY, 30 * DAY);
    const today = dayStart(Date.now());
    const old = dayStart(Date.now() - 5 * DAY);
    expect(created.slice(0, 2)).toEqual([
      partitionName(old, "day", "messages"),
      partitionName(old, "day", "deliveries"),
    ]);
    expect(created).toEqual(
      expect.arrayContaining(
        [0, 1, 2].flatMap((d) => [
          partitionName(today + d * DAY, "day", "messages"),
          partitionName(today + d * DAY, "day", "deliveries"),
        ]),
      ),
    );
    const p = (t: string, ms: number) => partitionName(dayStart(ms), "day", t as "messages");
    expect(await placeOf(pool, now!.messageId)).toEqual([
      p("messages", Date.now()),
      p("deliveries", Date.now()),
      p("deliveries", Date.now()),
    ]);
    expect(await placeOf(pool, fiveDays)).toEqual([p("messages", old), p("deliveries", old)]);
    // older than the payload retention: retention's, no period made for it
    expect(await placeOf(pool, fortyDays)).toEqual(["messages_default", "deliveries_default"]);
    // both tables have the same periods, each with its own unique indexes
    const bounds = async (t: "messages" | "deliveries") =>
      (await listPartitions(pool, t)).map((x) => [x.lo, x.hi]);
    expect(await bounds("deliveries")).toEqual(await bounds("messages"));
    const { rows: keys } = await pool.query(
      `select indexrelid::regclass::text as i from pg_index
       where indrelid = $1::regclass and indisunique order by 1`,
      [p("deliveries", Date.now())],
    );
    expect(keys.map((r) => r.i)).toEqual([
      `${p("deliveries", Date.now())}_id_key`,
      `${p("deliveries", Date.now())}_message_id_endpoint_id_key`,
    ]);
    // new rows go straight to their period; a second run makes nothing
    const [later] = (await writeMessages(
      pool,
      [{ appId: "app_p", eventType: "e", payload: "{}" }],
      5,
    )) as Array<{ messageId: string }>;
    expect((await placeOf(pool, later!.messageId))[0]).toBe(p("messages", Date.now()));
    expect(await ensureMessagePartitions(pool, DAILY, 30 * DAY)).toEqual([]);
  });

  test("retention drops a period past the payload age whole, keeping each message with a delivery queued, retrying, in flight or dead-lettered within its age, with all its deliveries", async () => {
    const pool = db.pool;
    await ensureMessagePartitions(
      pool,
      { interval: "day", aheadMs: 8 * DAY },
      8 * DAY,
      Date.now() - 6 * DAY,
    );
    const at = Date.now() - 4 * DAY;
    const token = "6f1c2a34-0000-4000-8000-000000000001";
    const ids = {
      delivered: await messageAt(pool, at, [["ep_p1", "delivered"]]),
      pending: await messageAt(pool, at, [
        ["ep_p1", "delivered"],
        ["ep_p2", "pending"],
      ]),
      retrying: await messageAt(pool, at, [["ep_p1", "failed"]]),
      inFlight: await messageAt(pool, at, [
        ["ep_p1", "in_flight", { token, lease: new Date(Date.now() + HOUR) }],
      ]),
      deadLetter: await messageAt(pool, at, [
        ["ep_p1", "dead_letter", { updatedAt: new Date(Date.now() - DAY) }],
      ]),
      oldDeadLetter: await messageAt(pool, at, [
        ["ep_p1", "dead_letter", { updatedAt: new Date(Date.now() - 20 * DAY) }],
      ]),
      canceled: await messageAt(pool, at, [["ep_p1", "canceled"]]),
      young: await messageAt(pool, Date.now() - DAY, [["ep_p1", "delivered"]]),
    };
    const deliveryIds = async (m: string) =>
      (
        await pool.query("select id from deliveries where message_id = $1 order by id", [m])
      ).rows.map((r) => String(r.id));
    const before = {
      pending: await deliveryIds(ids.pending),
      inFlight: await deliveryIds(ids.inFlight),
    };
    const retention: RetentionConfig = {
      payloadMs: 3 * DAY,
      attemptsMs: 30 * DAY,
      deadLetterMs: 10 * DAY,
      batch: 100,
    };
    const result = await purgeExpiredUntil(pool, retention, Number.POSITIVE_INFINITY);
    const dropped = result.droppedPartitions.map((p) => p.name);
    expect(dropped).toEqual(
      expect.arrayContaining([
        partitionName(dayStart(at), "day", "messages"),
        partitionName(dayStart(at), "day", "deliveries"),
      ]),
    );
    expect(dropped).not.toContain(partitionName(dayStart(Date.now() - DAY), "day", "messages"));
    // nothing of the dropped period was deleted row by row: the one message deleted is the
    // first test's, 40 days old, in the default partition
    expect(result.deleted.messages).toBe(1);
    for (const k of ["delivered", "oldDeadLetter", "canceled"] as const)
      expect(await placeOf(pool, ids[k]), k).toEqual([]);
    for (const k of ["pending", "retrying", "inFlight", "deadLetter"] as const)
      expect(new Set(await placeOf(pool, ids[k])), k).toEqual(
        new Set(["messages_default", "deliveries_default"]),
      );
    // every delivery of a held message, with its id, status and claim
    expect(await deliveryIds(ids.pending)).toEqual(before.pending);
    expect(await deliveryIds(ids.inFlight)).toEqual(before.inFlight);
    const { rows: st } = await pool.query(
      "select status from deliveries where message_id = $1 order by status",
      [ids.pending],
    );
    expect(st.map((r) => r.status)).toEqual(["delivered", "pending"]);
    expect(await placeOf(pool, ids.young)).toEqual([
      partitionName(dayStart(Date.now() - DAY), "day", "messages"),
      partitionName(dayStart(Date.now() - DAY), "day", "deliveries"),
    ]);
    expect(await orphans(pool)).toBe(0);
    // the worker holding the in-flight one writes its result as before (by id and claim)
    const { rowCount } = await pool.query(
      "update deliveries set status = 'delivered' where id = $1 and claim_token = $2",
      [before.inFlight[0], token],
    );
    expect(rowCount).toBe(1);
    // held rows get no period again (older than the payload age); once their work is done
    // the batched delete takes them
    expect(
      (await ensureMessagePartitions(pool, DAILY, retention.payloadMs)).filter((n) =>
        n.includes(new Date(dayStart(at)).toISOString().slice(0, 10).replace(/-/g, "")),
      ),
    ).toEqual([]);
    await pool.query(
      "update deliveries set status = 'delivered' where message_id = any ($1::text[])",
      [[ids.pending, ids.retrying]],
    );
    const second = await purgeExpiredUntil(pool, retention, Number.POSITIVE_INFINITY);
    expect(second.deleted.messages).toBe(3);
    expect(await placeOf(pool, ids.pending)).toEqual([]);
    expect((await placeOf(pool, ids.deadLetter)).length).toBe(2);
    expect(await orphans(pool)).toBe(0);
  });

  test("a role that may not drop partitions leaves the periods; a period detached by a run that stopped is dropped by the next", async () => {
    const pool = db.pool;
    const [period] = (await listPartitions(pool, "messages")).filter((p) => p.lo >= 1);
    const d = period!.name.replace("messages_", "deliveries_");
    await pool.query(`alter table deliveries detach partition ${d}`);
    await pool.query(`alter table messages detach partition ${period!.name}`);
    const dropped = await dropMessagePartitionsBefore(pool, 0, DAY);
    expect(dropped.flatMap((x) => x.partitions.map((p) => p.name)).sort()).toEqual(
      [d, period!.name].sort(),
    );
    expect((await pool.query("select to_regclass($1) as t", [d])).rows[0].t).toBeNull();
  });
});

describe("a period dropped while a worker claims and writes results", () => {
  let h: Harness;
  let receiver: Receiver;
  let dropDone = () => {};
  const periodsDropped = new Promise<void>((resolve) => {
    dropDone = resolve;
  });
  beforeAll(async () => {
    h = await startHarness();
    // the first request of each message to /flaky fails, and its retries are answered
    // only once the periods are dropped: every message keeps a delivery queued (retrying
    // or in flight) until then, however fast the worker runs against the drop
    const seen = new Set<string>();
    receiver = await startReceiver((req) => {
      if (req.path === "/flaky") {
        const id = String(req.headers["webhook-id"]);
        if (!seen.has(id)) {
          seen.add(id);
          return { status: 500 };
        }
        return periodsDropped.then(() => ({ status: 200, delayMs: 20 }));
      }
      return { status: 200, delayMs: 20 };
    });
  });
  afterAll(async () => {
    await receiver?.close();
    await h?.close();
  });

  test("no delivery lost or orphaned, no serialization failure or deadlock", async () => {
    const pool = h.db.pool;
    const app = await h.call("POST", "/api/v1/app", { name: "periods" });
    const endpoint = async (path: string) =>
      (
        await h.call("POST", `/api/v1/app/${app.body.id}/endpoint`, {
          url: `${receiver.url}${path}`,
          adaptiveConcurrency: "off",
          failureThreshold: 10_000,
        })
      ).body.id as string;
    const [ok, flaky] = [await endpoint("/ok"), await endpoint("/flaky")];
    // eight hourly periods three days back, 50 messages each
    const start = dayStart(Date.now() - 3 * DAY);
    await ensureMessagePartitions(pool, { interval: "hour", aheadMs: 7 * HOUR }, 0, start);
    const messages: string[] = [];
    for (let i = 0; i < 400; i++)
      messages.push(
        await messageAt(
          pool,
          start + Math.floor(i / 50) * HOUR + i,
          [
            [ok, "pending"],
            [flaky, "pending"],
          ],
          app.body.id,
        ),
      );
    const { rows: dl } = await pool.query(
      "select deadlocks::int as n from pg_stat_database where datname = current_database()",
    );

    const logged: string[] = [];
    const logger = pino({ level: "warn" }, linesInto(logged));
    const sender = makeHttpSender({
      ssrfGuard: makeSsrfGuard({ allowlist: h.config.ssrfAllowlist }),
      egress: h.config.egress,
    });
    const worker = makeWorker({
      pool,
      sender,
      config: { delivery: h.config.delivery, health: h.config.health, worker: h.config.worker },
      logger,
      secretBox: makeSecretBox(undefined, []),
      redactor: makeRedactor(),
      ssrfGuard: makeSsrfGuard({ allowlist: h.config.ssrfAllowlist }),
    });
    worker.start();
    try {
      await waitFor(() => receiver.requests.length >= 40, 30_000, "the worker under way");
      const result = await purgeExpiredUntil(
        pool,
        { payloadMs: 2 * DAY, attemptsMs: 30 * DAY, deadLetterMs: 30 * DAY, batch: 1000 },
        Number.POSITIVE_INFINITY,
      );
      dropDone();
      expect(
        result.droppedPartitions.filter((p) => p.name.startsWith("deliveries_p")),
      ).toHaveLength(8);
      await waitFor(
        async () =>
          (
            await pool.query(
              "select count(*)::int as n from deliveries where app_id = $1 and status <> 'delivered'",
              [app.body.id],
            )
          ).rows[0].n === 0,
        60_000,
        "every delivery delivered",
      );
    } finally {
      dropDone();
      await worker.stop();
      await sender.close();
    }
    const { rows } = await pool.query(
      `select (select count(*)::int from messages where app_id = $1) as messages,
              (select count(*)::int from deliveries where app_id = $1) as deliveries,
              (select count(distinct tableoid)::int from deliveries where app_id = $1) as places`,
      [app.body.id],
    );
    // every message was held (each had a delivery queued at its period's drop)
    expect(rows[0]).toEqual({ messages: 400, deliveries: 800, places: 1 });
    expect(await orphans(pool)).toBe(0);
    const delivered = new Set(receiver.on("/ok").map((r) => String(r.headers["webhook-id"])));
    expect(delivered.size).toBe(400);
    expect(logged.join("")).not.toMatch(/40001|40P01|deadlock|could not serialize/);
    const { rows: dl2 } = await pool.query(
      "select deadlocks::int as n from pg_stat_database where datname = current_database()",
    );
    expect(dl2[0].n).toBe(dl[0].n);
  });
});
