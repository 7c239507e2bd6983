/**
 * Requeue of dead letters (POST /dead-letters/requeue, docs/operations.md): one delivery (a fresh
 * attempt budget, the same message, recorded as requeued by whom and when), all dead
 * letters of one endpoint, everything that died since a time per app with and without
 * failed ones, 6,000 in one call, and release paced by the endpoint's strictest rate limit.
 *
 * Rows are seeded straight into the database (test/helpers/seeded-deliveries.ts) with
 * chosen statuses, timestamps and status codes; each test parks every claimable row when
 * done.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type Harness, startHarness } from "./helpers/harness.ts";
import {
  ago,
  DAY,
  died,
  HOUR,
  MIN,
  newApp,
  newEndpoint,
  parkEverything,
  seed,
  shownDeliveryIds,
  V1,
} from "./helpers/seeded-deliveries.ts";

describe("dead letters", () => {
  let h: Harness;
  /** a delivery's id as the API shows it */
  let dlv: (id: number) => string;
  let adminKeyId: string;

  beforeAll(async () => {
    h = await startHarness();
    dlv = await shownDeliveryIds(h.db.pool);
    adminKeyId = (await h.db.pool.query("select id from api_keys where role = 'admin'")).rows[0].id;
  });
  afterAll(async () => {
    await h?.close();
  });

  // ---------------------------------------------------------------------- requeue

  describe("requeue", () => {
    async function state(ids: number[]) {
      const { rows } = await h.db.pool.query(
        `select id, message_id, status, attempt_count, max_attempts, trigger, requeued_at, requeued_by,
                extract(epoch from next_attempt_at - now())::float8 as due_in_s
         from deliveries where id = any ($1::bigint[])`,
        [ids],
      );
      // in the order asked for
      return ids.map((id) => rows.find((r) => Number(r.id) === id)!);
    }

    test("one delivery: fresh attempt budget, same message, recorded as requeued by whom and when", async () => {
      const app = await newApp(h);
      const ep = await newEndpoint(h, app, { maxAttempts: 7 });
      const [dead, failed] = await seed(h.db.pool, [
        died(ep.id, ago(HOUR), 500, 5),
        {
          endpointId: ep.id,
          status: "failed",
          attempts: 2,
          code: 500,
          nextAttemptAt: new Date(Date.now() + DAY),
        },
      ]);
      const before = Date.now();
      const res = await h.call("POST", `${V1}/dead-letters/requeue`, {
        deliveryId: dlv(dead!.deliveryId),
      });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.body).toEqual({ requeued: 1 });
      const [row] = await state([dead!.deliveryId]);
      expect(row).toMatchObject({
        message_id: dead!.messageId,
        status: "pending",
        attempt_count: 0,
        max_attempts: 7, // the endpoint's own budget
        trigger: "manual",
        requeued_by: `api:${adminKeyId}`,
      });
      expect(row.requeued_at.getTime()).toBeGreaterThanOrEqual(before - 1_000);
      expect(row.due_in_s).toBeLessThanOrEqual(0.001);

      // Now pending: not a dead letter any more, a second requeue finds nothing
      const again = await h.call("POST", `${V1}/dead-letters/requeue`, {
        deliveryId: dlv(dead!.deliveryId),
      });
      expect(again.status).toBe(404);
      // A failed delivery is requeued by id only with includeFailed
      const f1 = await h.call("POST", `${V1}/dead-letters/requeue`, {
        deliveryId: dlv(failed!.deliveryId),
      });
      expect(f1.status).toBe(404);
      const f2 = await h.call("POST", `${V1}/dead-letters/requeue`, {
        deliveryId: dlv(failed!.deliveryId),
        includeFailed: true,
      });
      expect(f2.body).toEqual({ requeued: 1 });
      expect((await state([failed!.deliveryId]))[0]).toMatchObject({
        status: "pending",
        attempt_count: 0,
      });

      expect(
        (await h.call("POST", `${V1}/dead-letters/requeue`, { deliveryId: "dlv_999999999" }))
          .status,
      ).toBe(404);
      expect(
        (await h.call("POST", `${V1}/dead-letters/requeue`, { deliveryId: "nonsense" })).status,
      ).toBe(400);
      expect((await h.call("POST", `${V1}/dead-letters/requeue`, {})).status).toBe(400);
      await parkEverything(h.db.pool);
    });

    test("all dead letters of one endpoint, and nothing else", async () => {
      const app = await newApp(h);
      const a = await newEndpoint(h, app);
      const b = await newEndpoint(h, app);
      const rows = await seed(h.db.pool, [
        died(a.id, ago(3 * DAY), 500),
        died(a.id, ago(HOUR), 401),
        died(a.id, ago(MIN), "timeout"),
        died(b.id, ago(MIN), 500),
        {
          endpointId: a.id,
          status: "failed",
          attempts: 1,
          nextAttemptAt: new Date(Date.now() + DAY),
        },
        { endpointId: a.id, status: "delivered", attempts: 1 },
      ]);
      const res = await h.call("POST", `${V1}/dead-letters/requeue`, { endpointId: a.id });
      expect(res.body).toEqual({ requeued: 3 });
      const after = await state(rows.map((r) => r.deliveryId));
      expect(after.map((r) => r.status)).toEqual([
        "pending",
        "pending",
        "pending",
        "dead_letter",
        "failed",
        "delivered",
      ]);
      expect(after.map((r) => r.message_id)).toEqual(rows.map((r) => r.messageId));
      expect(
        after
          .slice(0, 3)
          .every((r) => r.attempt_count === 0 && r.requeued_by === `api:${adminKeyId}`),
      ).toBe(true);
      expect(after.slice(3).every((r) => r.requeued_at === null)).toBe(true);
      // an endpoint named by uid works too; nothing left to requeue there
      const again = await h.call("POST", `${V1}/dead-letters/requeue`, { endpointId: a.id });
      expect(again.body).toEqual({ requeued: 0 });
      expect(
        (await h.call("POST", `${V1}/dead-letters/requeue`, { endpointId: "ep_nonesuch" })).status,
      ).toBe(404);
      await parkEverything(h.db.pool);
    });

    test("everything that died since a time, per app, with and without failed ones", async () => {
      const R = await newApp(h);
      const S = await newApp(h);
      const r1 = await newEndpoint(h, R);
      const r2 = await newEndpoint(h, R);
      const s1 = await newEndpoint(h, S);
      // Times a few seconds back: every other dead letter of this database is older.
      const rows = await seed(h.db.pool, [
        died(r1.id, ago(3_000), 500), // 0 R recent
        died(r2.id, ago(2_000), 503), // 1 R recent
        died(r1.id, ago(3 * HOUR), 500), // 2 R old
        {
          endpointId: r1.id,
          status: "failed",
          attempts: 2,
          updatedAt: ago(2_000),
          nextAttemptAt: new Date(Date.now() + DAY),
        }, // 3 R failed recent
        {
          endpointId: r2.id,
          status: "failed",
          attempts: 2,
          updatedAt: ago(3 * HOUR),
          nextAttemptAt: new Date(Date.now() + DAY),
        }, // 4 R failed old
        died(s1.id, ago(2_000), 500), // 5 S recent
        died(s1.id, ago(3 * HOUR), 500), // 6 S old
      ]);
      const ids = rows.map((r) => r.deliveryId);
      const since = ago(30_000).toISOString();
      const statuses = async () => (await state(ids)).map((r) => r.status);

      const perApp = await h.call("POST", `${V1}/dead-letters/requeue`, { since, appId: R });
      expect(perApp.body).toEqual({ requeued: 2 });
      expect(await statuses()).toEqual([
        "pending",
        "pending",
        "dead_letter",
        "failed",
        "failed",
        "dead_letter",
        "dead_letter",
      ]);

      const withFailed = await h.call("POST", `${V1}/dead-letters/requeue`, {
        since,
        appId: R,
        includeFailed: true,
      });
      expect(withFailed.body).toEqual({ requeued: 1 });
      expect(await statuses()).toEqual([
        "pending",
        "pending",
        "dead_letter",
        "pending",
        "failed",
        "dead_letter",
        "dead_letter",
      ]);
      expect((await state([ids[3]!]))[0]).toMatchObject({ attempt_count: 0, trigger: "manual" });

      // no app: every app
      const all = await h.call("POST", `${V1}/dead-letters/requeue`, { since });
      expect(all.body).toEqual({ requeued: 1 });
      expect(await statuses()).toEqual([
        "pending",
        "pending",
        "dead_letter",
        "pending",
        "failed",
        "pending",
        "dead_letter",
      ]);
      await parkEverything(h.db.pool);
    });

    test("a large set (6,000 dead letters) in one call: same message ids, fresh budget, requeued by", async () => {
      const app = await newApp(h);
      const ep = await newEndpoint(h, app);
      const N = 6_000;
      await h.db.pool.query(
        `with m as (
           insert into messages (id, app_id, event_type, payload, created_at)
           select 'msg_bulk_' || lpad(g::text, 6, '0') || '_' || $3::text, $1::text, 'bulk.event',
                  '{"n":' || g || '}', now() - interval '2 days'
           from generate_series(1, $4::int) g
           returning id
         )
         insert into deliveries (message_id, endpoint_id, app_id, status, attempt_count, max_attempts,
                                 last_status_code, last_error_kind, last_error, created_at, updated_at)
         select id, $2::text, $1::text, 'dead_letter', 5, 5, 500, 'http', 'HTTP 500',
                now() - interval '2 days', now() - interval '1 day'
         from m`,
        [app, ep.id, ep.id.slice(3, 12), N],
      );
      const before = await h.db.pool.query(
        "select id, message_id from deliveries where endpoint_id = $1 order by id",
        [ep.id],
      );
      expect(before.rowCount).toBe(N);

      const started = performance.now();
      const res = await h.call("POST", `${V1}/dead-letters/requeue`, { endpointId: ep.id });
      const ms = performance.now() - started;
      console.log(`requeue of ${N} dead letters: one call, ${ms.toFixed(0)} ms`);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ requeued: N });

      const after = await h.db.pool.query(
        "select id, message_id from deliveries where endpoint_id = $1 order by id",
        [ep.id],
      );
      expect(after.rows).toEqual(before.rows);
      const { rows } = await h.db.pool.query(
        `select count(*)::int as n,
                count(*) filter (where status = 'pending' and attempt_count = 0 and max_attempts = 5
                                   and trigger = 'manual' and requeued_by = $2 and requeued_at is not null)::int as ok,
                count(distinct requeued_at)::int as requeue_times,
                extract(epoch from max(next_attempt_at) - min(next_attempt_at))::float8 as spread_s
         from deliveries where endpoint_id = $1`,
        [ep.id, `api:${adminKeyId}`],
      );
      // one statement: one transaction time for every row; no rate limit: all due at once
      expect(rows[0]).toEqual({ n: N, ok: N, requeue_times: 1, spread_s: 0 });
      await parkEverything(h.db.pool);
    });

    test("pacing: rows are released at the pace of the endpoint's strictest rate limit", async () => {
      const app = await newApp(h);
      const tenPerSecond = await newEndpoint(h, app, { ratePerSecond: 10 });
      const twoPerSecond = await newEndpoint(h, app, { ratePerSecond: 10, ratePerMinute: 120 });
      const oldStyle = await newEndpoint(h, app, { throttleRate: 4 });
      const seedDead = (ep: string, n: number) =>
        seed(
          h.db.pool,
          Array.from({ length: n }, (_, i) => died(ep, ago(HOUR - i * 1000), 429)),
        );
      await seedDead(tenPerSecond.id, 20);
      await seedDead(twoPerSecond.id, 6);
      await seedDead(oldStyle.id, 5);
      const spacing = async (ep: string) => {
        const { rows } = await h.db.pool.query(
          `select count(*)::int as n,
                  extract(epoch from max(next_attempt_at) - min(next_attempt_at))::float8 as spread_s,
                  min(gap)::float8 as min_gap_s, max(gap)::float8 as max_gap_s,
                  extract(epoch from min(next_attempt_at) - max(requeued_at))::float8 as first_after_requeue_s
           from (select next_attempt_at, requeued_at,
                        extract(epoch from next_attempt_at - lag(next_attempt_at) over (order by id)) as gap
                 from deliveries where endpoint_id = $1 and status = 'pending') s`,
          [ep],
        );
        return rows[0];
      };

      expect(
        (await h.call("POST", `${V1}/dead-letters/requeue`, { endpointId: tenPerSecond.id })).body,
      ).toEqual({ requeued: 20 });
      const ten = await spacing(tenPerSecond.id);
      expect(ten.n).toBe(20);
      expect(ten.first_after_requeue_s).toBeCloseTo(0, 3);
      expect(ten.min_gap_s).toBeCloseTo(0.1, 3);
      expect(ten.max_gap_s).toBeCloseTo(0.1, 3);
      expect(ten.spread_s).toBeCloseTo(1.9, 3);

      expect(
        (await h.call("POST", `${V1}/dead-letters/requeue`, { endpointId: twoPerSecond.id })).body,
      ).toEqual({ requeued: 6 });
      const two = await spacing(twoPerSecond.id);
      expect(two.min_gap_s).toBeCloseTo(0.5, 3);
      expect(two.max_gap_s).toBeCloseTo(0.5, 3);
      expect(two.spread_s).toBeCloseTo(2.5, 3);

      expect(
        (await h.call("POST", `${V1}/dead-letters/requeue`, { endpointId: oldStyle.id })).body,
      ).toEqual({ requeued: 5 });
      const old = await spacing(oldStyle.id);
      expect(old.min_gap_s).toBeCloseTo(0.25, 3);
      expect(old.spread_s).toBeCloseTo(1, 3);
      await parkEverything(h.db.pool);
    });
  });
});
