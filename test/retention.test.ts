/**
 * Retention: purgeExpired deletes exactly the rows past each age (attempts, dead letters,
 * finished messages with their deliveries) and nothing else; and a purge of 100k rows,
 * batch by batch, runs beside a worker without stalling delivery.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { RetentionConfig } from "../src/config.ts";
import type { Pool } from "../src/db/pool.ts";
import { DEAD_LETTER_PURGE_SQL, type PurgeProgress, purgeExpired } from "../src/ops/retention.ts";
import { type Harness, startHarness } from "./helpers/harness.ts";
import { maintenanceTask } from "./helpers/maintenance-task.ts";
import { type Receiver, startReceiver, waitFor } from "./helpers/receiver.ts";
import { seed } from "./helpers/seeded-deliveries.ts";

const V1 = "/api/v1";
const DEAD_URL = "http://127.0.0.1:9";
const MIN = 60_000;
const DAY = 24 * 60 * MIN;

async function appWithEndpoint(h: Harness, url = `${DEAD_URL}/x`) {
  const app = await h.call("POST", `${V1}/app`, {
    name: `ret-${Math.random().toString(36).slice(2)}`,
  });
  expect(app.status).toBe(201);
  const ep = await h.call("POST", `${V1}/app/${app.body.id}/endpoint`, { url });
  expect(ep.status).toBe(201);
  return { appId: app.body.id as string, endpointId: ep.body.id as string };
}

type Status = "pending" | "failed" | "in_flight" | "delivered" | "dead_letter" | "canceled";

/** A message `ageMs` old with one delivery per status; a dead letter died `deadAgoMs` ago. */
async function message(
  pool: Pool,
  target: { appId: string; endpointIds: string[] },
  name: string,
  ageMs: number,
  statuses: Status[],
  deadAgoMs = 0,
): Promise<string> {
  const id = `msg_ret_${name}_${Math.random().toString(36).slice(2, 10)}`;
  await pool.query(
    "insert into messages (id, app_id, event_type, payload, created_at) values ($1, $2, 'e', '{}', now() - $3::bigint * interval '1 millisecond')",
    [id, target.appId, ageMs],
  );
  for (const [i, status] of statuses.entries()) {
    await pool.query(
      `insert into deliveries (message_id, endpoint_id, app_id, status, attempt_count, max_attempts,
                               next_attempt_at, created_at, updated_at)
       values ($1, $2, $3, $4, 1, 5, now() + interval '1 day', now() - $5::bigint * interval '1 millisecond',
               now() - $6::bigint * interval '1 millisecond')`,
      [
        id,
        target.endpointIds[i],
        target.appId,
        status,
        ageMs,
        status === "dead_letter" ? deadAgoMs : ageMs,
      ],
    );
  }
  return id;
}

async function attempt(
  pool: Pool,
  target: { appId: string; endpointIds: string[] },
  ageMs: number,
): Promise<number> {
  const { rows } = await pool.query(
    `insert into attempts (delivery_id, message_id, endpoint_id, app_id, attempt_number, trigger, url,
                           started_at, latency_ms, outcome, status_code, created_at)
     values (0, 'msg_x', $1, $2, 1, 'scheduled', 'http://x', now() - $3::bigint * interval '1 millisecond',
             12, 'failure', 500, now() - $3::bigint * interval '1 millisecond')
     returning id`,
    [target.endpointIds[0], target.appId, ageMs],
  );
  return Number(rows[0].id);
}

// ---------------------------------------------------------------- the right rows

describe("purgeExpired removes exactly what is past its age", () => {
  let h: Harness;
  let retention: RetentionConfig;
  beforeAll(async () => {
    h = await startHarness();
    // attempts 10 days, dead letters 5 days, delivered messages 20 days; tiny batches
    retention = {
      ...h.config.retention,
      attemptsMs: 10 * DAY,
      deadLetterMs: 5 * DAY,
      payloadMs: 20 * DAY,
      batch: 2,
    };
  });
  afterAll(async () => {
    await h?.close();
  });

  test("attempts, dead letters and finished messages past their ages go; everything else stays", async () => {
    const pool = h.db.pool;
    const { appId, endpointId: e1 } = await appWithEndpoint(h);
    const e2 = (await h.call("POST", `${V1}/app/${appId}/endpoint`, { url: `${DEAD_URL}/y` })).body
      .id;
    const t = { appId, endpointIds: [e1, e2] };
    const OLD = 25 * DAY; // past the 20-day message age
    const YOUNG = 10 * DAY;

    const m = {
      deliveredOld: await message(pool, t, "m1", OLD, ["delivered"]),
      deliveredCanceledOld: await message(pool, t, "m2", OLD, ["delivered", "canceled"]),
      deliveredPendingOld: await message(pool, t, "m3", OLD, ["delivered", "pending"]),
      failedOld: await message(pool, t, "m4", OLD, ["failed"]),
      inFlightOld: await message(pool, t, "m5", OLD, ["in_flight"]),
      youngDeadOld: await message(pool, t, "m6", OLD, ["dead_letter"], 4 * DAY),
      oldDeadOld: await message(pool, t, "m7", OLD, ["dead_letter"], 6 * DAY),
      deliveredYoung: await message(pool, t, "m8", YOUNG, ["delivered"]),
      oldDeadYoung: await message(pool, t, "m9", YOUNG, ["dead_letter"], 6 * DAY),
      deliveredOldDeadOld: await message(
        pool,
        t,
        "m10",
        OLD,
        ["delivered", "dead_letter"],
        6 * DAY,
      ),
      // a dead letter one minute either side of the 5-day age
      deadJustPast: await message(pool, t, "m11", YOUNG, ["dead_letter"], 5 * DAY + MIN),
      deadJustShort: await message(pool, t, "m12", YOUNG, ["dead_letter"], 5 * DAY - MIN),
      // a delivered message one minute either side of the 20-day age
      deliveredJustPast: await message(pool, t, "m13", 20 * DAY + MIN, ["delivered"]),
      deliveredJustShort: await message(pool, t, "m14", 20 * DAY - MIN, ["delivered"]),
    };
    // attempts: one minute either side of the 10-day age, and well past / well short
    const attemptsGone = [
      await attempt(pool, t, 10 * DAY + MIN),
      await attempt(pool, t, 11 * DAY),
      await attempt(pool, t, 40 * DAY),
    ];
    const attemptsKept = [await attempt(pool, t, 10 * DAY - MIN), await attempt(pool, t, DAY)];
    // latency samples are the latency window's business, not this purge's
    await pool.query(
      "insert into latency_samples (endpoint_id, at, latency_ms, ok) values ($1, now() - interval '40 days', 5, true)",
      [e1],
    );

    const progress: PurgeProgress[] = [];
    const totals = await purgeExpired(pool, retention, (p) => progress.push({ ...p }));
    expect(totals).toEqual({ attempts: 3, dead_letters: 4, messages: 5 });
    // progress after every batch of 2 that deleted something, with running totals
    expect(progress).toEqual([
      { what: "attempts", deleted: 2 },
      { what: "attempts", deleted: 3 },
      { what: "dead_letters", deleted: 2 },
      { what: "dead_letters", deleted: 4 },
      { what: "messages", deleted: 2 },
      { what: "messages", deleted: 4 },
      { what: "messages", deleted: 5 },
    ]);

    const { rows: att } = await pool.query("select id from attempts order by id");
    expect(att.map((r) => Number(r.id))).toEqual(attemptsKept);
    expect(attemptsGone.every((id) => !att.some((r) => Number(r.id) === id))).toBe(true);

    const { rows: msgs } = await pool.query("select id from messages");
    const left = new Set(msgs.map((r) => r.id));
    // messages older than 20 days with nothing pending, retrying, in flight or dead (after the
    // dead-letter purge); young messages stay even when their only delivery was purged
    const gone = [
      "deliveredOld",
      "deliveredCanceledOld",
      "oldDeadOld",
      "deliveredOldDeadOld",
      "deliveredJustPast",
    ];
    for (const [name, id] of Object.entries(m)) {
      const expectGone = gone.includes(name);
      expect(left.has(id), `${name} ${expectGone ? "gone" : "kept"}`).toBe(!expectGone);
    }

    const deliveries = async (id: string) =>
      (
        await pool.query("select status from deliveries where message_id = $1 order by status", [
          id,
        ])
      ).rows.map((r) => r.status);
    expect(await deliveries(m.deliveredPendingOld)).toEqual(["delivered", "pending"]);
    expect(await deliveries(m.failedOld)).toEqual(["failed"]);
    expect(await deliveries(m.inFlightOld)).toEqual(["in_flight"]);
    expect(await deliveries(m.youngDeadOld)).toEqual(["dead_letter"]);
    expect(await deliveries(m.deliveredYoung)).toEqual(["delivered"]);
    expect(await deliveries(m.oldDeadYoung)).toEqual([]); // the dead letter went, the young message stays
    expect(await deliveries(m.deadJustPast)).toEqual([]);
    expect(await deliveries(m.deadJustShort)).toEqual(["dead_letter"]);
    expect(await deliveries(m.deliveredJustShort)).toEqual(["delivered"]);
    for (const id of [
      m.deliveredOld,
      m.deliveredCanceledOld,
      m.oldDeadOld,
      m.deliveredOldDeadOld,
      m.deliveredJustPast,
    ]) {
      expect(await deliveries(id)).toEqual([]);
    }
    const { rows: counts } = await pool.query(
      `select (select count(*) from messages)::int as messages, (select count(*) from deliveries)::int as deliveries,
              (select count(*) from latency_samples)::int as samples, (select count(*) from endpoints)::int as endpoints`,
    );
    expect(counts[0]).toEqual({ messages: 9, deliveries: 8, samples: 1, endpoints: 2 });

    // nothing left past its age: a second run deletes nothing
    const again: PurgeProgress[] = [];
    expect(await purgeExpired(pool, retention, (p) => again.push(p))).toEqual({
      attempts: 0,
      dead_letters: 0,
      messages: 0,
    });
    expect(again).toEqual([]);
  });

  test("a message's own retention comes first, but never while a delivery of it is still due", async () => {
    const pool = h.db.pool;
    const { appId, endpointId: e1 } = await appWithEndpoint(h);
    const e2 = (await h.call("POST", `${V1}/app/${appId}/endpoint`, { url: `${DEAD_URL}/y` })).body
      .id;
    const t = { appId, endpointIds: [e1, e2] };
    const YOUNG = DAY; // far inside every configured age
    const m = {
      expiredDelivered: await message(pool, t, "x1", YOUNG, ["delivered", "canceled"]),
      expiredDead: await message(pool, t, "x2", YOUNG, ["delivered", "dead_letter"], MIN),
      expiredPending: await message(pool, t, "x3", YOUNG, ["delivered", "pending"]),
      expiredFailed: await message(pool, t, "x4", YOUNG, ["failed"]),
      expiredInFlight: await message(pool, t, "x5", YOUNG, ["in_flight"]),
      notYetExpired: await message(pool, t, "x6", YOUNG, ["delivered"]),
      noExpiry: await message(pool, t, "x7", YOUNG, ["delivered"]),
    };
    const expire = (id: string, inMs: number) =>
      pool.query(
        "update messages set expires_at = now() + $2::bigint * interval '1 millisecond' where id = $1",
        [id, inMs],
      );
    for (const id of [
      m.expiredDelivered,
      m.expiredDead,
      m.expiredPending,
      m.expiredFailed,
      m.expiredInFlight,
    ]) {
      await expire(id, -MIN);
    }
    await expire(m.notYetExpired, MIN);

    expect(await purgeExpired(pool, retention)).toEqual({
      attempts: 0,
      dead_letters: 1,
      messages: 2,
    });
    const { rows } = await pool.query("select id from messages where app_id = $1", [appId]);
    const left = new Set(rows.map((r) => r.id));
    const gone = ["expiredDelivered", "expiredDead"];
    for (const [name, id] of Object.entries(m)) {
      expect(left.has(id), `${name} ${gone.includes(name) ? "gone" : "kept"}`).toBe(
        !gone.includes(name),
      );
    }
    const statuses = async (id: string) =>
      (
        await pool.query("select status from deliveries where message_id = $1 order by status", [
          id,
        ])
      ).rows.map((r) => r.status);
    expect(await statuses(m.expiredPending)).toEqual(["delivered", "pending"]);
    expect(await statuses(m.expiredFailed)).toEqual(["failed"]);
    expect(await statuses(m.expiredInFlight)).toEqual(["in_flight"]);

    // once the pending delivery is done, the expired message goes at the next purge
    await pool.query("update deliveries set status = 'delivered' where message_id = $1", [
      m.expiredPending,
    ]);
    expect(await purgeExpired(pool, retention)).toEqual({
      attempts: 0,
      dead_letters: 0,
      messages: 1,
    });
    expect(await statuses(m.expiredPending)).toEqual([]);
  });

  test("the dead-letter purge reads about as many index entries as it deletes, not every dead letter", async () => {
    const pool = h.db.pool;
    const { appId, endpointId } = await appWithEndpoint(h);
    const t = { appId, endpointIds: [endpointId] };
    // a history of 1,000 young dead letters; 3 past the age, and 2 young ones of messages
    // past their own retention
    const young = await seed(
      pool,
      Array.from({ length: 1_000 }, () => ({
        endpointId,
        status: "dead_letter" as const,
        createdAt: new Date(Date.now() - DAY),
      })),
    );
    const old = await Promise.all(
      [1, 2, 3].map((i) => message(pool, t, `dl-old-${i}`, 7 * DAY, ["dead_letter"], 6 * DAY)),
    );
    const expired = await Promise.all(
      [1, 2].map((i) => message(pool, t, `dl-exp-${i}`, DAY, ["dead_letter"], DAY)),
    );
    await pool.query(
      "update messages set expires_at = now() - interval '1 minute' where id = any ($1)",
      [expired],
    );
    await pool.query("vacuum analyze deliveries, messages");

    // the batch's statement alone, in a transaction of its own, and the index entries it read
    const client = await pool.connect();
    try {
      await client.query("begin");
      const { rowCount } = await client.query(DEAD_LETTER_PURGE_SQL, [
        retention.deadLetterMs,
        1_000,
      ]);
      const { rows } = await client.query(
        // (entries returned by the index scans of deliveries and messages, and rows by
        // their sequential scans)
        `select coalesce(sum(pg_stat_get_xact_tuples_returned(r.oid)), 0)::int as n
         from (select t.relid as oid from pg_partition_tree('deliveries') t where t.isleaf
               union all
               select t.relid from pg_partition_tree('messages') t where t.isleaf) l
         cross join lateral (
           select l.oid
           union all
           select i.indexrelid from pg_index i where i.indrelid = l.oid) r`,
      );
      await client.query("rollback");
      expect(rowCount).toBe(old.length + expired.length);
      // read as one filter, every one of the 1,000 young dead letters was read too
      expect(rows[0].n).toBeGreaterThanOrEqual(old.length + expired.length);
      expect(rows[0].n).toBeLessThan(100);
    } finally {
      client.release();
    }
    expect(young).toHaveLength(1_000);
  });

  test("the maintenance runner's retention task applies the configured ages", async () => {
    const pool = h.db.pool;
    const { appId, endpointId } = await appWithEndpoint(h);
    const t = { appId, endpointIds: [endpointId] };
    const old = await message(pool, t, "task-old", 21 * DAY, ["delivered"]);
    const young = await message(pool, t, "task-young", 19 * DAY, ["delivered"]);
    const oldAttempt = await attempt(pool, t, 11 * DAY);
    await maintenanceTask({ ...h.config, retention }, "retention").run(pool);
    const ids = (
      await pool.query("select id from messages where id = any ($1)", [[old, young]])
    ).rows.map((r) => r.id);
    expect(ids).toEqual([young]);
    expect((await pool.query("select 1 from attempts where id = $1", [oldAttempt])).rowCount).toBe(
      0,
    );
  });
});

// ------------------------------------------------------------ 100k rows, no stall

describe("a purge of 100k rows beside a working worker", () => {
  let h: Harness;
  let rx: Receiver;
  beforeAll(async () => {
    h = await startHarness();
    rx = await startReceiver();
  });
  afterAll(async () => {
    await h?.close();
    await rx?.close();
  });

  test("deliveries keep arriving while the purge runs", async () => {
    const pool = h.db.pool;
    const old = await appWithEndpoint(h);
    const live = await appWithEndpoint(h, `${rx.url}/live`);
    const ATTEMPTS = 80_000;
    const MESSAGES = 20_000;
    const seedStart = performance.now();
    await pool.query(
      `insert into attempts (delivery_id, message_id, endpoint_id, app_id, attempt_number, trigger, url,
                             started_at, latency_ms, outcome, status_code, created_at)
       select g, 'msg_old_' || g, $1, $2, 1, 'scheduled', 'http://old', now() - interval '40 days', 10,
              'success', 200, now() - interval '40 days'
       from generate_series(1, $3::int) g`,
      [old.endpointId, old.appId, ATTEMPTS],
    );
    await pool.query(
      `with m as (
         insert into messages (id, app_id, event_type, payload, created_at)
         select 'msg_old_' || lpad(g::text, 6, '0'), $2::text, 'old', '{"old":' || g || '}', now() - interval '40 days'
         from generate_series(1, $3::int) g returning id
       )
       insert into deliveries (message_id, endpoint_id, app_id, status, attempt_count, max_attempts,
                               delivered_at, created_at, updated_at)
       select id, $1::text, $2::text, 'delivered', 1, 5, now() - interval '40 days', now() - interval '40 days',
              now() - interval '40 days'
       from m`,
      [old.endpointId, old.appId, MESSAGES],
    );
    await pool.query("analyze");
    console.log(
      `seeded ${ATTEMPTS} attempts and ${MESSAGES} messages in ${(performance.now() - seedStart).toFixed(0)} ms`,
    );

    h.startWorker();
    let producing = true;
    let sent = 0;
    const producer = (async () => {
      while (producing) {
        const res = await h.call("POST", `${V1}/app/${live.appId}/msg`, {
          eventType: "live",
          payload: { n: sent },
        });
        expect(res.status).toBe(202);
        sent++;
        await new Promise((r) => setTimeout(r, 20));
      }
    })();
    await waitFor(() => rx.on("/live").length >= 10, 15_000, "steady deliveries before the purge");

    const retention: RetentionConfig = { ...h.config.retention, batch: 2_000 };
    let lastBatchAt = performance.now();
    let longestBatchMs = 0;
    let batches = 0;
    /** when each batch ended (Date.now(), the receiver's clock) */
    const batchEnds: number[] = [];
    const purgeStart = Date.now();
    const totals = await purgeExpired(pool, retention, () => {
      const now = performance.now();
      longestBatchMs = Math.max(longestBatchMs, now - lastBatchAt);
      lastBatchAt = now;
      batches++;
      batchEnds.push(Date.now());
    });
    const purgeEnd = Date.now();
    producing = false;
    await producer;

    expect(totals).toEqual({ attempts: ATTEMPTS, dead_letters: 0, messages: MESSAGES });
    const during = rx
      .on("/live")
      .map((r) => r.at)
      .filter((at) => at >= purgeStart && at <= purgeEnd);
    const marks = [purgeStart, ...during, purgeEnd];
    let maxGapMs = 0;
    for (let i = 1; i < marks.length; i++) maxGapMs = Math.max(maxGapMs, marks[i]! - marks[i - 1]!);
    console.log(
      `purge of ${ATTEMPTS + MESSAGES} rows (+${MESSAGES} cascaded deliveries) in ${purgeEnd - purgeStart} ms, ` +
        `${batches} batches, longest batch ${longestBatchMs.toFixed(0)} ms; ` +
        `${during.length} deliveries arrived during it, longest gap between deliveries ${maxGapMs} ms`,
    );
    expect(during.length).toBeGreaterThan(0);
    // Order, not duration: the purge ran in many short transactions and deliveries arrived
    // between two of them, while the purge was under way, not only before or after it.
    expect(batches).toBeGreaterThan(2);
    const gapsWithDeliveries = batchEnds
      .slice(1)
      .filter((end, i) => during.some((at) => at > batchEnds[i]! && at <= end)).length;
    expect(gapsWithDeliveries).toBeGreaterThan(0);

    // every live message was delivered; nothing live was purged
    await waitFor(
      async () => {
        const { rows } = await pool.query(
          "select count(*) filter (where status = 'delivered')::int as delivered, count(*)::int as n from deliveries where app_id = $1",
          [live.appId],
        );
        return rows[0].n === sent && rows[0].delivered === sent;
      },
      15_000,
      "all live messages delivered",
    );
    const { rows } = await pool.query(
      `select (select count(*) from messages where app_id = $1)::int as old_messages,
              (select count(*) from deliveries where app_id = $1)::int as old_deliveries,
              (select count(*) from attempts where app_id = $1)::int as old_attempts,
              (select count(*) from messages where app_id = $2)::int as live_messages,
              (select count(*) from attempts where app_id = $2)::int as live_attempts`,
      [old.appId, live.appId],
    );
    expect(rows[0]).toEqual({
      old_messages: 0,
      old_deliveries: 0,
      old_attempts: 0,
      live_messages: sent,
      live_attempts: sent,
    });
  });
});
