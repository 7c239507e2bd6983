/**
 * Two tenants, A and B, each with every kind of resource, for the isolation tests
 * (docs/security.md, "API keys"): an app with its app key, an endpoint that answers 200
 * and one that fails (1 attempt, breaker threshold 1), a message delivered to the first
 * and dead-lettered at the second (a real worker and receiver on 127.0.0.1, so attempts,
 * dead letters and an open circuit are genuine), a second message left pending (B sent it
 * with an idempotency key), a replay of the first endpoint left running (no replay runner
 * runs), and a shared event type in the catalogue.
 *
 * `startTenants()` in a file's beforeAll; `tenantCalls(() => tenants)` binds the calls to
 * it, the getter read on every call.
 */
import { randomBytes } from "node:crypto";
import { expect } from "vitest";
import { publicIdsOf } from "../../src/ids-public-key.ts";
import { type CallResult, type Harness, startHarness } from "./harness.ts";
import { type Receiver, startReceiver, waitFor } from "./receiver.ts";
import type { Fixture } from "./tenant-routes.ts";

const V1 = "/api/v1";

export interface Tenant {
  appId: string;
  appUid: string;
  epId: string;
  epUid: string;
  failId: string;
  failUid: string;
  msgId: string;
  eventId: string;
  attemptId: string;
  deadDlv: string;
  pendingDlv: string;
  /** a replay of the endpoint that stays running (no replay runner runs) */
  taskId: string;
  key: string;
  keyId: string;
  /** a portal access link of the app (POST /auth/app-portal-access) */
  portalTokenId: string;
  portalToken: string;
}

export interface Tenants {
  h: Harness;
  rx: Receiver;
  A: Tenant;
  B: Tenant;
  fixture: Fixture;
  /** the catalogue entry every key reads */
  eventType: string;
  /** the idempotency key B sent its pending message with */
  idempotencyKey: string;
  /** this file's tag in uids */
  run: string;
  close(): Promise<void>;
}

/** A request with `key`, a JSON body if given. */
async function request(
  h: Harness,
  key: string,
  method: string,
  url: string,
  body?: unknown,
  headers: Record<string, string> = {},
) {
  const res = await h.api.inject({
    method: method as "GET",
    url,
    headers: {
      authorization: `Bearer ${key}`,
      ...(body !== undefined && { "content-type": "application/json" }),
      ...headers,
    },
    payload: body === undefined ? undefined : JSON.stringify(body),
  });
  let parsed: CallResult["body"] = null;
  try {
    parsed = res.body ? JSON.parse(res.body) : null;
  } catch {
    parsed = res.body;
  }
  return { status: res.statusCode, body: parsed, text: res.body };
}

async function deliveryOf(h: Harness, msgId: string, endpointId: string) {
  const { rows } = await h.db.pool.query(
    "select id, status from deliveries where message_id = $1 and endpoint_id = $2",
    [msgId, endpointId],
  );
  return rows[0] as { id: number; status: string } | undefined;
}

/** Both tenants, their deliveries settled (the worker stopped again), and the catalogue entry. */
export async function startTenants(): Promise<Tenants> {
  const h = await startHarness();
  const rx = await startReceiver((req) => ({ status: req.path.startsWith("/fail") ? 500 : 200 }));
  try {
    return await seedTenants(h, rx);
  } catch (err) {
    await h.close();
    await rx.close();
    throw err;
  }
}

async function seedTenants(h: Harness, rx: Receiver): Promise<Tenants> {
  const eventType = `iso.catalogue.${randomBytes(3).toString("hex")}`;
  const idempotencyKey = `iso-${randomBytes(6).toString("hex")}`;
  const run = randomBytes(4).toString("hex");

  async function makeTenant(letter: string): Promise<Tenant> {
    const appUid = `iso-${letter}-${run}`;
    const app = await h.call("POST", `${V1}/app`, { name: `tenant ${letter}`, uid: appUid });
    expect(app.status).toBe(201);
    const appId: string = app.body.id;
    const ep = await h.call("POST", `${V1}/app/${appId}/endpoint`, {
      url: `${rx.url}/ok-${letter}`,
      uid: `${letter}-ep-${run}`,
    });
    const fail = await h.call("POST", `${V1}/app/${appId}/endpoint`, {
      url: `${rx.url}/fail-${letter}`,
      uid: `${letter}-fail-${run}`,
      maxAttempts: 1,
      failureThreshold: 1,
    });
    expect([ep.status, fail.status]).toEqual([201, 201]);
    const key = await h.call("POST", `${V1}/api-keys`, {
      role: "app",
      appId: appUid,
      name: `tenant ${letter}`,
    });
    expect(key.status).toBe(201);
    const eventId = `${letter}-evt-${run}`;
    const msg = await h.call("POST", `${V1}/app/${appId}/msg`, {
      eventType: "iso.seed",
      eventId,
      payload: { tenant: letter },
    });
    expect(msg.status).toBe(202);
    const portal = await h.call("POST", `${V1}/auth/app-portal-access/${appId}`, {});
    expect(portal.status).toBe(200);
    return {
      appId,
      appUid,
      epId: ep.body.id,
      epUid: ep.body.uid,
      failId: fail.body.id,
      failUid: fail.body.uid,
      msgId: msg.body.id,
      eventId,
      attemptId: "",
      deadDlv: "",
      pendingDlv: "",
      taskId: "",
      key: key.body.key,
      keyId: key.body.id,
      portalTokenId: portal.body.id,
      portalToken: portal.body.token,
    };
  }

  const A = await makeTenant("a");
  const B = await makeTenant("b");

  // Real attempts, a dead letter and an open circuit for both tenants.
  const worker = h.startWorker();
  await waitFor(
    async () => {
      const states = await Promise.all(
        [A, B].flatMap((t) => [deliveryOf(h, t.msgId, t.epId), deliveryOf(h, t.msgId, t.failId)]),
      );
      return states.map((s) => s?.status).join() === "delivered,dead_letter,delivered,dead_letter";
    },
    20_000,
    "seed deliveries",
  );
  await worker.stop();

  // ids as the API shows them (docs/public-ids.md)
  const ids = await publicIdsOf(h.db.pool);
  for (const t of [A, B]) {
    const { rows } = await h.db.pool.query(
      "select id from attempts where message_id = $1 and endpoint_id = $2",
      [t.msgId, t.epId],
    );
    t.attemptId = ids.format("attempt", rows[0].id);
    t.deadDlv = ids.format("delivery", (await deliveryOf(h, t.msgId, t.failId))!.id);
    // a second message stays pending (no worker runs from here on): a cancelable delivery
    const pending = await request(
      h,
      t.key,
      "POST",
      `${V1}/app/${t.appId}/msg`,
      { eventType: "iso.pending", payload: { n: 2 } },
      t === B ? { "idempotency-key": idempotencyKey } : {},
    );
    expect(pending.status).toBe(202);
    t.pendingDlv = ids.format("delivery", (await deliveryOf(h, pending.body.id, t.epId))!.id);
    const task = await h.call("POST", `${V1}/app/${t.appId}/endpoint/${t.epId}/recover`, {
      since: new Date(Date.now() - 3_600_000).toISOString(),
    });
    expect(task.status).toBe(202);
    t.taskId = task.body.id;
  }
  const et = await h.call("POST", `${V1}/event-type`, {
    name: eventType,
    description: "shared catalogue entry",
  });
  expect(et.status).toBe(201);

  return {
    h,
    rx,
    A,
    B,
    fixture: { rx: rx.url, appB: B.appId },
    eventType,
    idempotencyKey,
    run,
    async close() {
      await h.close();
      await rx.close();
    },
  };
}

/** Requests as a tenant, and the values and state the isolation tests compare. */
export function tenantCalls(get: () => Tenants) {
  /** A request with `key`, a JSON body if given. */
  const as = (
    key: string,
    method: string,
    url: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ) => request(get().h, key, method, url, body, headers);

  /** Path values naming tenant `t`'s resources, by id or by uid/eventId. */
  function valuesOf(t: Tenant, form: "id" | "uid"): Record<string, string> {
    return {
      appId: form === "id" ? t.appId : t.appUid,
      endpointId: form === "id" ? t.epId : t.epUid,
      msgId: form === "id" ? t.msgId : t.eventId,
      attemptId: t.attemptId,
      deliveryId: t.pendingDlv,
      taskId: t.taskId,
      keyId: t.keyId,
      tokenId: t.portalTokenId,
      name: get().eventType,
    };
  }

  /** Values of resources that exist nowhere. */
  function ghostValues(): Record<string, string> {
    const g = randomBytes(4).toString("hex");
    return {
      appId: `ghost-app-${g}`,
      endpointId: `ghost-ep-${g}`,
      msgId: `ghost-msg-${g}`,
      attemptId: "atmpt_999999999",
      deliveryId: "dlv_999999999",
      taskId: `qtask_ghost${g}`,
      keyId: `key_ghost${g}`,
      tokenId: `ptok_ghost${g}`,
      name: `ghost.${g}`,
    };
  }

  /** B's state, to prove that nothing A tried changed it. */
  async function snapshotB() {
    const { h, B } = get();
    const q = async (sql: string) => (await h.db.pool.query(sql, [B.appId])).rows;
    return {
      app: await q("select name, uid, metadata, updated_at from applications where id = $1"),
      endpoints: await q(
        "select id, url, description, disabled, updated_at from endpoints where app_id = $1 order by id",
      ),
      secrets: await q(
        `select s.id, s.secret, s.expires_at from endpoint_secrets s join endpoints e on e.id = s.endpoint_id
         where e.app_id = $1 order by s.id`,
      ),
      messages: await q("select id from messages where app_id = $1 order by id"),
      deliveries: await q(
        "select id, status, attempt_count, updated_at from deliveries where app_id = $1 order by id",
      ),
      health: await q(
        `select h.endpoint_id, h.circuit_state, h.consecutive_failures from endpoint_health h
         join endpoints e on e.id = h.endpoint_id where e.app_id = $1 order by 1`,
      ),
      keys: await q("select id, revoked_at from api_keys where app_id = $1 order by id"),
      portalLinks: await q(
        "select id, expires_at, revoked_at from portal_tokens where app_id = $1 order by id",
      ),
      tasks: await q(
        "select id, status, done, updated_at from background_tasks where app_id = $1 order by id",
      ),
    };
  }

  return { as, valuesOf, ghostValues, snapshotB };
}
