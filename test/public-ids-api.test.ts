/**
 * Opaque delivery and attempt ids through the API (docs/public-ids.md): what an app-scoped
 * key sees says nothing about the installation's row numbers, the shown ids work wherever
 * an id is taken (paths, bodies, iterators both ways), and old `dlv_<n>` / `atmpt_<n>` ids
 * keep working: for admin keys always, for app keys only those shown before the upgrade
 * (checked on a database migrated with rows in it, as an installation upgrades).
 */
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createApiKey } from "../src/api/auth.ts";
import { loadMigrations } from "../src/db/migrate.ts";
import type { Pool } from "../src/db/pool.ts";
import { ID_PREFIX, newId } from "../src/ids.ts";
import type { PublicIds } from "../src/ids-public.ts";
import { publicIdsOf } from "../src/ids-public-key.ts";
import { createTestDb } from "./helpers/db.ts";
import { buildTestApi, type Harness, startHarness, testConfig } from "./helpers/harness.ts";
import { died, MIN, newApp, newEndpoint, seed, V1 } from "./helpers/seeded-deliveries.ts";

const SHOWN_DELIVERY = /^dlv_[A-V][0-9A-Za-z]{10}$/;
const SHOWN_ATTEMPT = /^atmpt_[A-V][0-9A-Za-z]{10}$/;

/** A request through app.inject with `key`; the JSON answer. */
async function call(
  api: FastifyInstance,
  key: string,
  method: string,
  url: string,
  body?: unknown,
) {
  const res = await api.inject({
    method: method as "GET",
    url,
    headers: {
      authorization: `Bearer ${key}`,
      ...(body !== undefined && { "content-type": "application/json" }),
    },
    payload: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.statusCode, body: res.body ? JSON.parse(res.body) : null };
}

/** `n` attempts of one delivery, in one statement; their row keys, oldest first. */
async function insertAttempts(pool: Pool, deliveryId: number, n: number): Promise<number[]> {
  const { rows } = await pool.query(
    `insert into attempts (delivery_id, message_id, endpoint_id, app_id, attempt_number, trigger,
                           url, started_at, latency_ms, outcome, status_code)
     select d.id, d.message_id, d.endpoint_id, d.app_id, k, 'scheduled', 'http://127.0.0.1:9/',
            now() - (10 - k) * interval '1 minute', 5, 'failure', 500
     from deliveries d, generate_series(1, $2::int) k where d.id = $1::bigint
     order by k
     returning id`,
    [deliveryId, n],
  );
  return rows.map((r) => Number(r.id));
}

/** The 64-bit value behind a shown id's 11 characters. */
function numberBehind(shown: string): bigint {
  const digits = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
  const tail = shown.slice(shown.indexOf("_") + 1);
  let v = BigInt(digits.indexOf(tail[0]!) - 10);
  for (const c of tail.slice(1)) v = v * 62n + BigInt(digits.indexOf(c));
  return v;
}

describe("a fresh installation", () => {
  let h: Harness;
  let ids: PublicIds;
  let appId: string;
  let appKey: string;
  let deadKeys: number[];
  let attemptKeys: number[];
  let msgId: string;

  beforeAll(async () => {
    h = await startHarness();
    ids = await publicIdsOf(h.db.pool);
    appId = await newApp(h);
    const ep = await newEndpoint(h, appId);
    appKey = (await createApiKey(h.db.pool, { role: "app", appId })).key;
    // twelve dead letters with consecutive row keys, newest last
    const rows = await seed(
      h.db.pool,
      Array.from({ length: 12 }, (_, i) => died(ep.id, new Date(Date.now() - (20 - i) * MIN), 500)),
    );
    deadKeys = rows.map((r) => r.deliveryId);
    msgId = rows[0]!.messageId;
    attemptKeys = await insertAttempts(h.db.pool, deadKeys[0]!, 7);
  });
  afterAll(async () => {
    await h?.close();
  });

  test("consecutive deliveries and attempts, as an app key sees them: neither consecutive nor ordered", async () => {
    expect(deadKeys).toEqual(deadKeys.map((_, i) => deadKeys[0]! + i));
    const list = await call(h.api, appKey, "GET", `${V1}/dead-letters?limit=50`);
    expect(list.status).toBe(200);
    // newest first, as always: the keys descending, the shown ids in no order
    const shown: string[] = list.body.data.map((d: { deliveryId: string }) => d.deliveryId);
    expect(shown).toEqual([...deadKeys].reverse().map((k) => ids.format("delivery", k)));
    for (const id of shown) expect(id).toMatch(SHOWN_DELIVERY);
    expect([...shown].sort()).not.toEqual(shown);
    expect([...shown].sort().reverse()).not.toEqual(shown);
    const values = shown.map(numberBehind);
    for (let i = 1; i < values.length; i++) {
      const step = values[i - 1]! - values[i]!;
      expect(step === 1n || step === -1n).toBe(false);
    }

    const attempts = await call(h.api, appKey, "GET", `${V1}/app/${appId}/attempt/msg/${msgId}`);
    expect(attempts.status).toBe(200);
    const attemptIds: string[] = attempts.body.data.map((a: { id: string }) => a.id);
    expect(attemptIds).toEqual([...attemptKeys].reverse().map((k) => ids.format("attempt", k)));
    for (const id of attemptIds) expect(id).toMatch(SHOWN_ATTEMPT);
    expect([...attemptIds].sort()).not.toEqual(attemptIds);
    expect([...attemptIds].sort().reverse()).not.toEqual(attemptIds);
  });

  test("shown ids work as input: one attempt, iterators forwards and backwards, cancel, requeue", async () => {
    const all = (await call(h.api, appKey, "GET", `${V1}/app/${appId}/attempt/msg/${msgId}`)).body
      .data as { id: string }[];
    const one = await call(
      h.api,
      appKey,
      "GET",
      `${V1}/app/${appId}/msg/${msgId}/attempt/${all[2]!.id}`,
    );
    expect(one.status).toBe(200);
    expect(one.body.id).toBe(all[2]!.id);

    const forwards: string[] = [];
    let page = await call(h.api, appKey, "GET", `${V1}/app/${appId}/attempt/msg/${msgId}?limit=3`);
    for (;;) {
      forwards.push(...page.body.data.map((a: { id: string }) => a.id));
      if (page.body.done) break;
      page = await call(
        h.api,
        appKey,
        "GET",
        `${V1}/app/${appId}/attempt/msg/${msgId}?limit=3&iterator=${page.body.iterator}`,
      );
      expect(page.status).toBe(200);
    }
    expect(forwards).toEqual(all.map((a) => a.id));
    const back = await call(
      h.api,
      appKey,
      "GET",
      `${V1}/app/${appId}/attempt/msg/${msgId}?limit=2&iterator=-${all[4]!.id}`,
    );
    expect(back.body.data.map((a: { id: string }) => a.id)).toEqual([all[2]!.id, all[3]!.id]);

    const dead = await call(h.api, appKey, "GET", `${V1}/dead-letters?limit=5`);
    const next = await call(
      h.api,
      appKey,
      "GET",
      `${V1}/dead-letters?limit=50&iterator=${dead.body.iterator}`,
    );
    expect(next.body.data).toHaveLength(deadKeys.length - 5);

    const target = dead.body.data[0].deliveryId as string;
    const requeued = await call(h.api, appKey, "POST", `${V1}/dead-letters/requeue`, {
      deliveryId: target,
    });
    expect(requeued.body).toEqual({ requeued: 1 });
    const canceled = await call(h.api, appKey, "POST", `${V1}/deliveries/${target}/cancel`);
    expect(canceled.status).toBe(200);
    expect(canceled.body).toEqual({ deliveryId: target, status: "canceled" });
  });

  test("old ids: an admin key's dlv_<n>, <n>, atmpt_<n> resolve; an app key's (none shown here) are 404 like ids that do not exist", async () => {
    const [k1, k2] = deadKeys as [number, number];
    for (const raw of [`dlv_${k1}`, String(k2)])
      expect(
        (await h.call("POST", `${V1}/dead-letters/requeue`, { deliveryId: raw })).body,
        raw,
      ).toEqual({ requeued: 1 });
    const a = attemptKeys[1]!;
    for (const raw of [`atmpt_${a}`, String(a)]) {
      const res = await h.call("GET", `${V1}/app/${appId}/msg/${msgId}/attempt/${raw}`);
      expect(res.status, raw).toBe(200);
      expect(res.body.id).toBe(ids.format("attempt", a));
    }

    const ghost = await call(h.api, appKey, "POST", `${V1}/deliveries/dlv_999999999/cancel`);
    expect(ghost.status).toBe(404);
    for (const raw of [`dlv_${k1}`, String(k1)]) {
      const res = await call(h.api, appKey, "POST", `${V1}/deliveries/${raw}/cancel`);
      expect(res, raw).toEqual(ghost);
    }
    const attempt = await call(
      h.api,
      appKey,
      "GET",
      `${V1}/app/${appId}/msg/${msgId}/attempt/atmpt_${a}`,
    );
    expect(attempt.status).toBe(404);
    // ... and as an iterator, a number cannot place an app key in the global sequence
    const probe = await call(
      h.api,
      appKey,
      "GET",
      `${V1}/app/${appId}/attempt/msg/${msgId}?iterator=atmpt_${a}`,
    );
    expect(probe.status).toBe(400);
  });

  test("garbled ids are 400, well-shaped ids of nothing 404, never a 500", async () => {
    const shown = ids.format("delivery", deadKeys[3]!);
    const cases: [string, number][] = [
      ["dlv_", 400],
      ["dlv_x", 400],
      ["dlv_1.5", 400],
      ["dlv_-1", 400],
      ["dlv_0", 400],
      [`${shown}0`, 400],
      [shown.toLowerCase(), 400],
      [ids.format("attempt", deadKeys[3]!), 400],
      ["dlv_Vzzzzzzzzzz", 404],
      [ids.format("delivery", 2 ** 40), 404],
    ];
    for (const [raw, status] of cases) {
      for (const key of [h.adminKey, appKey]) {
        const res = await call(
          h.api,
          key,
          "POST",
          `${V1}/deliveries/${encodeURIComponent(raw)}/cancel`,
        );
        expect(res.status, raw).toBe(status);
      }
    }
    const wrongKind = await h.call("GET", `${V1}/app/${appId}/msg/${msgId}/attempt/${shown}`);
    expect(wrongKind.status).toBe(400);
  });
});

test("an upgraded installation: app keys keep the old ids shown before migration 0014, and no newer number", async () => {
  const db = await createTestDb({ template: false });
  let api: FastifyInstance | undefined;
  try {
    const migrations = await loadMigrations();
    for (const m of migrations.filter((m) => m.id < 14)) await db.pool.query(m.sql);
    const appId = newId(ID_PREFIX.app);
    const endpointId = newId(ID_PREFIX.endpoint);
    await db.pool.query("insert into applications (id, name) values ($1, 'old')", [appId]);
    await db.pool.query(
      "insert into endpoints (id, app_id, url) values ($1, $2, 'http://127.0.0.1:9/')",
      [endpointId, appId],
    );
    /** a message of its own with one delivery to the endpoint; the delivery's row key */
    const delivery = async (status: string) => {
      const id = newId(ID_PREFIX.message);
      await db.pool.query(
        "insert into messages (id, app_id, event_type, payload) values ($1, $2, 'old.event', '{}')",
        [id, appId],
      );
      const { rows } = await db.pool.query(
        `insert into deliveries (message_id, endpoint_id, app_id, status, max_attempts, attempt_count)
         values ($1, $2, $3, $4, 5, 1) returning id`,
        [id, endpointId, appId, status],
      );
      return { key: Number(rows[0].id), msgId: id };
    };
    const oldPending = (await delivery("pending")).key;
    const dead = await delivery("dead_letter");
    const oldDead = dead.key;
    const msgId = dead.msgId;
    const [oldAttempt] = await insertAttempts(db.pool, oldDead, 2);
    // a number handed out and gone (retention) was shown too: the sequence counts, not max(id)
    const deleted = (await delivery("pending")).key;
    await db.pool.query("delete from deliveries where id = $1", [deleted]);

    for (const m of migrations.filter((m) => m.id >= 14)) await db.pool.query(m.sql);
    const { rows } = await db.pool.query(
      "select legacy_delivery_max, legacy_attempt_max from public_id_key",
    );
    expect(rows[0]).toEqual({ legacy_delivery_max: deleted, legacy_attempt_max: oldAttempt! + 1 });

    const newPending = (await delivery("pending")).key;
    const [newAttempt] = await insertAttempts(db.pool, oldDead, 1);
    api = await buildTestApi({ pool: db.pool, config: testConfig({ databaseUrl: db.url }) });
    const ids = await publicIdsOf(db.pool);
    const appKey = (await createApiKey(db.pool, { role: "app", appId })).key;
    const adminKey = (await createApiKey(db.pool, { role: "admin" })).key;
    const attemptPath = (raw: string) => `${V1}/app/${appId}/msg/${msgId}/attempt/${raw}`;

    // shown before the upgrade: still good for the app key, in both old forms
    for (const raw of [`atmpt_${oldAttempt}`, String(oldAttempt)]) {
      const res = await call(api, appKey, "GET", attemptPath(raw));
      expect(res.status, raw).toBe(200);
      expect(res.body.id).toBe(ids.format("attempt", oldAttempt!));
    }
    expect(
      (
        await call(api, appKey, "POST", `${V1}/dead-letters/requeue`, {
          deliveryId: `dlv_${oldDead}`,
        })
      ).body,
    ).toEqual({ requeued: 1 });
    expect((await call(api, appKey, "POST", `${V1}/deliveries/${oldPending}/cancel`)).body).toEqual(
      {
        deliveryId: ids.format("delivery", oldPending),
        status: "canceled",
      },
    );

    // created since: only by the shown id for the app key; by number for the admin key
    expect((await call(api, appKey, "GET", attemptPath(`atmpt_${newAttempt}`))).status).toBe(404);
    expect(
      (await call(api, appKey, "GET", attemptPath(ids.format("attempt", newAttempt!)))).status,
    ).toBe(200);
    expect((await call(api, adminKey, "GET", attemptPath(`atmpt_${newAttempt}`))).status).toBe(200);
    const ghost = await call(api, appKey, "POST", `${V1}/deliveries/dlv_999999999/cancel`);
    expect(await call(api, appKey, "POST", `${V1}/deliveries/dlv_${newPending}/cancel`)).toEqual(
      ghost,
    );
    expect(
      (await call(api, adminKey, "POST", `${V1}/deliveries/dlv_${newPending}/cancel`)).body,
    ).toEqual({
      deliveryId: ids.format("delivery", newPending),
      status: "canceled",
    });
  } finally {
    await api?.close();
    await db.drop();
  }
});
