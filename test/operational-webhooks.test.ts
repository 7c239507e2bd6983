/**
 * Operational webhooks (docs/operational-webhooks.md): Svix-shaped events about deliveries
 * and endpoints, delivered by hookrelay's own queue to an operator URL. A real receiver on
 * 127.0.0.1 acts as the operator; every event is triggered by a real action (API calls,
 * deliveries to receivers that fail, recover or answer 410), its payload is checked field
 * by field against Svix's schemas, and its signature is verified with the receiver kit.
 * The operator URL fails at first: the events are retried, not lost, and the operator's
 * own failing deliveries raise no events about themselves.
 */
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { makeHttpSender } from "../src/delivery/http-sender.ts";
import type { OperationalTarget } from "../src/domain/operational-events.ts";
import { publicIdsOf } from "../src/ids-public-key.ts";
import { silentLogger } from "../src/logger.ts";
import {
  ensureOperationalEndpoint,
  OPERATIONAL_MAX_ATTEMPTS,
} from "../src/ops/operational-webhook.ts";
import { verifyWebhookMessage } from "../src/receiver/index.ts";
import { makeRedactor } from "../src/security/redact.ts";
import { makeSecretBox } from "../src/security/secret-box.ts";
import { makeSsrfGuard } from "../src/security/ssrf-guard.ts";
import { makeWorker, type Worker } from "../src/worker/worker.ts";
import { buildTestApi, type Harness, startHarness } from "./helpers/harness.ts";
import { type Receiver, type Reply, startReceiver, waitFor } from "./helpers/receiver.ts";

const V1 = "/api/v1";
const OP_PATH = "/operator/events";

let h: Harness;
let api: FastifyInstance;
let worker: Worker;
let sender: ReturnType<typeof makeHttpSender>;
let op: Receiver;
let rx: Receiver;
let target: OperationalTarget & { endpointId: string };
let opSecret: string;

/** Per customer path: how the receiver answers its nth request (0-based). */
const scripts = new Map<string, (n: number) => Reply>();
/** The operator URL fails the first five tries of the first event it sees, then takes all. */
let firstEventId: string | null = null;
let firstEventTries = 0;

interface OpEvent {
  id: string;
  type: string;
  // biome-ignore lint/suspicious/noExplicitAny: Svix event data; asserted field by field
  data: any;
}
const verified: OpEvent[] = [];

beforeAll(async () => {
  h = await startHarness();
  op = await startReceiver((req) => {
    const id = String(req.headers["webhook-id"]);
    firstEventId ??= id;
    if (id === firstEventId && firstEventTries++ < 5) return { status: 503 };
    return { status: 204 };
  });
  const seen = new Map<string, number>();
  rx = await startReceiver((req) => {
    const n = seen.get(req.path) ?? 0;
    seen.set(req.path, n + 1);
    return scripts.get(req.path)?.(n) ?? { status: 200 };
  });
  const box = makeSecretBox(undefined);
  target = await ensureOperationalEndpoint(h.db.pool, `${op.url}${OP_PATH}`, box, 5);
  api = await buildTestApi({ pool: h.db.pool, config: h.config, operational: target });
  sender = makeHttpSender({ ssrfGuard: makeSsrfGuard({ allowlist: h.config.ssrfAllowlist }) });
  worker = makeWorker({
    pool: h.db.pool,
    sender,
    config: h.config,
    logger: silentLogger,
    secretBox: box,
    redactor: makeRedactor(h.config.sensitiveFields),
    operational: target,
  });
  worker.start();
  const secret = await call("GET", `${V1}/app/hookrelay-operator/endpoint/operational/secret`);
  expect(secret.status).toBe(200);
  opSecret = secret.body.key;
});
afterAll(async () => {
  await worker?.stop();
  await sender?.close();
  await api?.close();
  await h?.close();
  await op?.close();
  await rx?.close();
});

async function call(method: string, url: string, body?: unknown) {
  const res = await api.inject({
    method: method as "GET",
    url,
    headers: {
      authorization: `Bearer ${h.adminKey}`,
      ...(body !== undefined && { "content-type": "application/json" }),
    },
    payload: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.statusCode, body: res.body ? JSON.parse(res.body) : null, text: res.body };
}

/** Every event the operator URL received so far, once each, verified with the receiver kit. */
function events(): OpEvent[] {
  // (the first event's five refused tries carry the same id and signature scheme)
  const fresh = op
    .on(OP_PATH)
    .filter((r) => !verified.some((v) => v.id === r.headers["webhook-id"]));
  for (const r of fresh) {
    const id = String(r.headers["webhook-id"]);
    const { payload } = verifyWebhookMessage<{ type: string; data: unknown }>({
      secret: opSecret,
      headers: r.headers as Record<string, string>,
      body: r.body,
    });
    if (!verified.some((v) => v.id === id)) verified.push({ id, ...payload } as OpEvent);
  }
  return verified;
}

/** Waits for the one event of `type` that `match` picks. */
async function eventOf(type: string, match: (data: OpEvent["data"]) => boolean): Promise<OpEvent> {
  let found: OpEvent | undefined;
  await waitFor(
    () => {
      found = events().find((e) => e.type === type && match(e.data));
      return found !== undefined;
    },
    20_000,
    `operational event ${type}`,
  );
  return found!;
}

let seq = 0;
async function app(): Promise<{ id: string; uid: string }> {
  const uid = `tenant-${++seq}`;
  const a = await call("POST", `${V1}/app`, { name: `Tenant ${seq}`, uid });
  expect(a.status).toBe(201);
  return { id: a.body.id, uid };
}

async function endpoint(appId: string, fields: Record<string, unknown> = {}) {
  const path = `/customer-${++seq}`;
  const ep = await call("POST", `${V1}/app/${appId}/endpoint`, {
    url: `${rx.url}${path}`,
    uid: `ep-${seq}`,
    ...fields,
  });
  expect(ep.status, ep.text).toBe(201);
  return { id: ep.body.id as string, uid: ep.body.uid as string, path };
}

async function send(appId: string, eventId?: string): Promise<string> {
  const msg = await call("POST", `${V1}/app/${appId}/msg`, {
    eventType: "order.paid",
    ...(eventId && { eventId }),
    payload: { order: ++seq },
  });
  expect(msg.status).toBe(202);
  return msg.body.id;
}

/** The attempt rows of a message, oldest first, as Svix's lastAttempt would show them. */
async function attemptsOf(msgId: string) {
  const { rows } = await h.db.pool.query<{
    id: number;
    status_code: number | null;
    started_at: Date;
  }>("select id, status_code, started_at from attempts where message_id = $1 order by id", [msgId]);
  const ids = await publicIdsOf(h.db.pool);
  return rows.map((r) => ({
    id: ids.format("attempt", r.id),
    responseStatusCode: r.status_code ?? 0,
    timestamp: r.started_at.toISOString(),
  }));
}

// =======================================================================================

describe("endpoint events, raised by the API", () => {
  test("created, updated, disabled (manual), enabled, deleted: Svix's fields, exactly", async () => {
    const a = await app();
    const ep = await endpoint(a.id);
    const subject = { appId: a.id, appUid: a.uid, endpointId: ep.id, endpointUid: ep.uid };
    expect((await eventOf("endpoint.created", (d) => d.endpointId === ep.id)).data).toEqual(
      subject,
    );

    expect(
      (await call("PATCH", `${V1}/app/${a.id}/endpoint/${ep.id}`, { description: "x" })).status,
    ).toBe(200);
    await eventOf("endpoint.updated", (d) => d.endpointId === ep.id);

    expect(
      (await call("PATCH", `${V1}/app/${a.uid}/endpoint/${ep.uid}`, { disabled: true })).status,
    ).toBe(200);
    const disabled = await eventOf("endpoint.disabled", (d) => d.endpointId === ep.id);
    expect(disabled.data).toEqual({ ...subject, trigger: "manual" });

    expect(
      (await call("PATCH", `${V1}/app/${a.id}/endpoint/${ep.id}`, { disabled: false })).status,
    ).toBe(200);
    expect((await eventOf("endpoint.enabled", (d) => d.endpointId === ep.id)).data).toEqual(
      subject,
    );

    expect((await call("DELETE", `${V1}/app/${a.id}/endpoint/${ep.id}`)).status).toBe(204);
    expect((await eventOf("endpoint.deleted", (d) => d.endpointId === ep.id)).data).toEqual(
      subject,
    );

    // per endpoint change one event, plus the state change itself: no doubles
    const mine = events()
      .filter((e) => e.data.endpointId === ep.id)
      .map((e) => e.type);
    expect(mine.sort()).toEqual(
      [
        "endpoint.created",
        "endpoint.updated",
        "endpoint.updated",
        "endpoint.disabled",
        "endpoint.updated",
        "endpoint.enabled",
        "endpoint.deleted",
      ].sort(),
    );
  });

  test("deleting an application raises endpoint.deleted for each of its endpoints", async () => {
    const a = await app();
    const eps = [await endpoint(a.id), await endpoint(a.id)];
    for (const ep of eps) await eventOf("endpoint.created", (d) => d.endpointId === ep.id);
    expect((await call("DELETE", `${V1}/app/${a.id}`)).status).toBe(204);
    for (const ep of eps)
      expect((await eventOf("endpoint.deleted", (d) => d.endpointId === ep.id)).data).toEqual({
        appId: a.id,
        appUid: a.uid,
        endpointId: ep.id,
        endpointUid: ep.uid,
      });
  });

  test("an app without a uid has appUid null; a refused change raises nothing", async () => {
    const a = await call("POST", `${V1}/app`, { name: "no uid" });
    const ep = await endpoint(a.body.id, { uid: null });
    const created = await eventOf("endpoint.created", (d) => d.endpointId === ep.id);
    expect(created.data).toEqual({
      appId: a.body.id,
      appUid: null,
      endpointId: ep.id,
      endpointUid: null,
    });
    const refused = await call("PATCH", `${V1}/app/${a.body.id}/endpoint/${ep.id}`, {
      url: "ftp://x",
    });
    expect(refused.status).toBe(422);
    const { rows } = await h.db.pool.query(
      "select count(*)::int as n from messages where app_id = $1 and payload like $2",
      [target.appId, `%${ep.id}%`],
    );
    expect(rows[0].n).toBe(1);
  });
});

describe("delivery events, raised by the result write", () => {
  test("failing on the fourth failed attempt, then recovered on the success after it", async () => {
    const a = await app();
    const ep = await endpoint(a.id, { maxAttempts: 8 });
    scripts.set(ep.path, (n) => ({ status: n < 4 ? 500 : 200 }));
    const eventId = `order-${seq}`;
    const msgId = await send(a.id, eventId);
    const failing = await eventOf("message.attempt.failing", (d) => d.msgId === msgId);
    const recovered = await eventOf("message.attempt.recovered", (d) => d.msgId === msgId);
    const attempts = await attemptsOf(msgId);
    expect(attempts.map((x) => x.responseStatusCode)).toEqual([500, 500, 500, 500, 200]);
    const base = { appId: a.id, appUid: a.uid, endpointId: ep.id, msgId, msgEventId: eventId };
    expect(failing.data).toEqual({ ...base, lastAttempt: attempts[3] });
    expect(recovered.data).toEqual({ ...base, lastAttempt: attempts[4] });
    // once each
    expect(
      events()
        .filter((e) => e.data.msgId === msgId)
        .map((e) => e.type),
    ).toEqual(["message.attempt.failing", "message.attempt.recovered"]);
  });

  test("exhausted when the attempts run out; recovered when a resend then succeeds", async () => {
    const a = await app();
    const ep = await endpoint(a.id, { maxAttempts: 2 });
    let healthy = false;
    scripts.set(ep.path, () => ({ status: healthy ? 200 : 502 }));
    const msgId = await send(a.id);
    const exhausted = await eventOf("message.attempt.exhausted", (d) => d.msgId === msgId);
    const attempts = await attemptsOf(msgId);
    expect(exhausted.data).toEqual({
      appId: a.id,
      appUid: a.uid,
      endpointId: ep.id,
      msgId,
      msgEventId: null,
      lastAttempt: attempts[1],
    });
    expect(attempts).toHaveLength(2);

    healthy = true;
    const resend = await call("POST", `${V1}/app/${a.id}/msg/${msgId}/endpoint/${ep.id}/resend`);
    expect(resend.status).toBe(202);
    const recovered = await eventOf("message.attempt.recovered", (d) => d.msgId === msgId);
    expect(recovered.data.lastAttempt).toEqual((await attemptsOf(msgId))[2]);
    expect(recovered.data.lastAttempt.responseStatusCode).toBe(200);
  });

  test("a connection error reports responseStatusCode 0; a permanent 400 is exhausted at once", async () => {
    const a = await app();
    const dead = await call("POST", `${V1}/app/${a.id}/endpoint`, {
      url: "http://127.0.0.1:9/nobody-listens",
      maxAttempts: 1,
    });
    const bad = await endpoint(a.id, { maxAttempts: 5 });
    scripts.set(bad.path, () => ({ status: 400 }));
    const msgId = await send(a.id);
    const toDead = await eventOf(
      "message.attempt.exhausted",
      (d) => d.msgId === msgId && d.endpointId === dead.body.id,
    );
    expect(toDead.data.lastAttempt.responseStatusCode).toBe(0);
    const toBad = await eventOf(
      "message.attempt.exhausted",
      (d) => d.msgId === msgId && d.endpointId === bad.id,
    );
    expect(toBad.data.lastAttempt.responseStatusCode).toBe(400);
  });

  test("410 Gone: the endpoint is disabled (trigger automatic, failSince the 410) and the delivery exhausted", async () => {
    const a = await app();
    const ep = await endpoint(a.id);
    scripts.set(ep.path, () => ({ status: 410 }));
    const msgId = await send(a.id);
    const disabled = await eventOf("endpoint.disabled", (d) => d.endpointId === ep.id);
    const [attempt] = await attemptsOf(msgId);
    expect(disabled.data).toEqual({
      appId: a.id,
      appUid: a.uid,
      endpointId: ep.id,
      endpointUid: ep.uid,
      failSince: attempt!.timestamp,
      trigger: "automatic",
    });
    const exhausted = await eventOf("message.attempt.exhausted", (d) => d.msgId === msgId);
    expect(exhausted.data.lastAttempt).toEqual(attempt);
  });
});

describe("delivery of the events themselves", () => {
  test("the operator URL's failures were retried: the first event arrived after five 503s", async () => {
    await waitFor(() => events().some((e) => e.id === firstEventId), 20_000, "the first event");
    const tries = op.on(OP_PATH).filter((r) => r.headers["webhook-id"] === firstEventId);
    expect(tries).toHaveLength(6);
    const { rows } = await h.db.pool.query(
      "select status, attempt_count, max_attempts from deliveries where message_id = $1",
      [firstEventId],
    );
    expect(rows).toEqual([
      { status: "delivered", attempt_count: 6, max_attempts: OPERATIONAL_MAX_ATTEMPTS },
    ]);
  });

  test("no loop: the operator application's deliveries raised no events, although one failed five times", async () => {
    const { rows } = await h.db.pool.query<{ payload: string }>(
      "select payload from messages where app_id = $1",
      [target.appId],
    );
    expect(rows.length).toBeGreaterThan(10);
    for (const r of rows) expect(JSON.parse(r.payload).data.appId).not.toBe(target.appId);
    // ... and every event was signed for the operator and delivered
    await waitFor(
      async () => {
        const { rows: open } = await h.db.pool.query(
          "select count(*)::int as n from deliveries where app_id = $1 and status <> 'delivered'",
          [target.appId],
        );
        return open[0].n === 0;
      },
      20_000,
      "every event delivered",
    );
    expect(events()).toHaveLength(rows.length);
  });
});

describe("an operator application deleted by hand", () => {
  test("endpoint changes and result writes go on; no event is written", async () => {
    expect((await call("DELETE", `${V1}/app/hookrelay-operator`)).status).toBe(204);
    const a = await app();
    const ep = await endpoint(a.id, { maxAttempts: 1 });
    scripts.set(ep.path, () => ({ status: 500 }));
    expect(
      (await call("PATCH", `${V1}/app/${a.id}/endpoint/${ep.id}`, { description: "y" })).status,
    ).toBe(200);
    const msgId = await send(a.id);
    await waitFor(
      async () => {
        const { rows } = await h.db.pool.query(
          "select status from deliveries where message_id = $1",
          [msgId],
        );
        return rows[0]?.status === "dead_letter";
      },
      20_000,
      "the dead letter recorded",
    );
    const { rows } = await h.db.pool.query(
      "select count(*)::int as n from messages where app_id = $1",
      [target.appId],
    );
    expect(rows[0].n).toBe(0);
  });
});
