/**
 * The official `svix` npm client against hookrelay on a real port (setting
 * `serverUrl` is all a Svix user should have to change). Deliveries go to a real receiver
 * on 127.0.0.1 and are verified with `standardwebhooks` and the secret the client returned.
 *
 * The tests run in order and share one application and endpoint: each step builds on the
 * state the previous one left, as a Svix user's code would.
 */
import type { AddressInfo } from "node:net";
import { Webhook } from "standardwebhooks";
import {
  ApiException,
  type ApplicationOut,
  type EndpointOut,
  MessageAttemptTriggerType,
  type MessageOut,
  MessageStatus,
  Svix,
} from "svix";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type Harness, startHarness } from "./helpers/harness.ts";
import { type Received, type Receiver, startReceiver, waitFor } from "./helpers/receiver.ts";

let h: Harness;
let rx: Receiver;
let svix: Svix;

beforeAll(async () => {
  // The allow-list keeps 127.0.0.1 endpoints valid once an SSRF guard checks URLs on save.
  h = await startHarness({ ssrfAllowlist: ["127.0.0.0/8"] });
  rx = await startReceiver();
  await h.api.listen({ host: "127.0.0.1", port: 0 });
  const { port } = h.api.server.address() as AddressInfo;
  // A trailing slash, as users often write it: the client strips it.
  svix = new Svix(h.adminKey, { serverUrl: `http://127.0.0.1:${port}/` });
});
afterAll(async () => {
  await h?.close(); // stops the worker, closes the listening API and drops the database
  await rx?.close();
});

const PATH = "/svix-hook";
const uid = `acme-${Date.now().toString(36)}`;
let app: ApplicationOut;
let ep: EndpointOut;
let msg: MessageOut;
let secret: string;

const headersOf = (r: Received) => r.headers as Record<string, string>;
const validDate = (d: unknown) => d instanceof Date && !Number.isNaN(d.getTime());

async function attemptsOf(msgId: string) {
  return (await svix.messageAttempt.listByMsg(app.id, msgId)).data;
}

describe("svix client against hookrelay", () => {
  test("application.create with uid, application.get by uid", async () => {
    app = await svix.application.create({ name: "Acme", uid, metadata: { plan: "pro" } });
    expect(app.id).toMatch(/^app_/);
    expect(app).toMatchObject({ name: "Acme", uid, metadata: { plan: "pro" } });
    expect(validDate(app.createdAt)).toBe(true);
    expect(validDate(app.updatedAt)).toBe(true);

    const got = await svix.application.get(uid);
    expect(got.id).toBe(app.id);
    expect(got.name).toBe("Acme");
    expect(got.createdAt.getTime()).toBe(app.createdAt.getTime());
  });

  test("endpoint.create with eventTypes, endpoint.getSecret", async () => {
    ep = await svix.endpoint.create(app.id, {
      url: `${rx.url}${PATH}`,
      description: "billing hook",
      eventTypes: ["invoice.paid"],
    });
    expect(ep.id).toMatch(/^ep_/);
    expect(ep).toMatchObject({
      url: `${rx.url}${PATH}`,
      description: "billing hook",
      eventTypes: ["invoice.paid"],
    });
    expect(ep.metadata).toEqual({});
    expect(validDate(ep.createdAt)).toBe(true);

    secret = (await svix.endpoint.getSecret(app.id, ep.id)).key;
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]+=*$/);
  });

  test("message.create; the worker delivers it signed, verifiable with the client's secret", async () => {
    const payload = {
      invoice: "in_1",
      amount: 4200,
      currency: "EUR",
      lines: [{ sku: "a", qty: 2 }],
    };
    msg = await svix.message.create(app.id, {
      eventType: "invoice.paid",
      payload,
      eventId: `evt-${uid}`,
    });
    expect(msg.id).toMatch(/^msg_/);
    expect(msg.eventType).toBe("invoice.paid");
    expect(msg.eventId).toBe(`evt-${uid}`);
    expect(validDate(msg.timestamp)).toBe(true);
    // The endpoint filters on invoice.paid: this one must not reach it.
    const other = await svix.message.create(app.id, {
      eventType: "invoice.voided",
      payload: { invoice: "in_2" },
    });

    h.startWorker();
    await waitFor(() => rx.on(PATH).length === 1, 10_000, "the delivery");
    const req = rx.on(PATH)[0]!;
    expect(req.method).toBe("POST");
    expect(req.headers["webhook-id"]).toBe(msg.id);
    const verified = new Webhook(secret).verify(req.body, headersOf(req));
    expect(verified).toEqual(payload);
    // A different secret does not verify: the check above means something.
    const wrong = new Webhook(`whsec_${Buffer.alloc(32, 7).toString("base64")}`);
    expect(() => wrong.verify(req.body, headersOf(req))).toThrow();

    // The filtered-out message produced no delivery (and never will).
    const { rows } = await h.db.pool.query(
      "select count(*)::int as n from deliveries where message_id = $1",
      [other.id],
    );
    expect(rows[0].n).toBe(0);
  });

  test("the client's automatic idempotency keys do not merge distinct creates", async () => {
    const body = { eventType: "invoice.voided", payload: { same: true } };
    const a = await svix.message.create(app.id, body);
    const b = await svix.message.create(app.id, body);
    expect(a.id).not.toBe(b.id);
    // An explicit key does: the second call replays the first response.
    const key = `k-${uid}`;
    const c = await svix.message.create(app.id, body, { idempotencyKey: key });
    const d = await svix.message.create(app.id, body, { idempotencyKey: key });
    expect(d.id).toBe(c.id);
  });

  test("message.list contains the message; get by id and by eventId", async () => {
    const list = await svix.message.list(app.id);
    expect(list.data.map((m) => m.id)).toContain(msg.id);
    expect(typeof list.done).toBe("boolean");
    const filtered = await svix.message.list(app.id, { eventTypes: ["invoice.paid"] });
    expect(filtered.data.map((m) => m.id)).toEqual([msg.id]);
    const withContent = await svix.message.get(app.id, msg.id, { withContent: true });
    expect(withContent.payload).toMatchObject({ invoice: "in_1", amount: 4200 });
    const byEventId = await svix.message.get(app.id, `evt-${uid}`);
    expect(byEventId.id).toBe(msg.id);
  });

  test("messageAttempt.listByMsg and listByEndpoint show one successful attempt", async () => {
    // The result is written back just after the receiver answered.
    await waitFor(
      async () => (await attemptsOf(msg.id)).length === 1,
      10_000,
      "the attempt record",
    );
    const page = await svix.messageAttempt.listByMsg(app.id, msg.id);
    expect(page.data).toHaveLength(1);
    expect(page.done).toBe(true);
    const a = page.data[0]!;
    expect(a).toMatchObject({
      msgId: msg.id,
      endpointId: ep.id,
      url: `${rx.url}${PATH}`,
      status: MessageStatus.Success,
      statusText: "success",
      responseStatusCode: 200,
      triggerType: MessageAttemptTriggerType.Scheduled,
    });
    expect(a.id).toEqual(expect.any(String));
    expect(a.response).toBe("ok");
    expect(a.responseDurationMs).toBeGreaterThanOrEqual(0);
    expect(validDate(a.timestamp)).toBe(true);
    // the stored attempt's start
    const { rows: stored } = await h.db.pool.query(
      "select started_at from attempts where message_id = $1",
      [msg.id],
    );
    expect(a.timestamp.getTime()).toBe((stored[0].started_at as Date).getTime());

    const byEndpoint = await svix.messageAttempt.listByEndpoint(app.id, ep.id);
    expect(byEndpoint.data.map((x) => x.id)).toEqual([a.id]);
    const onlySuccess = await svix.messageAttempt.listByEndpoint(app.id, ep.id, {
      status: MessageStatus.Success,
    });
    expect(onlySuccess.data).toHaveLength(1);
    const onlyFailed = await svix.messageAttempt.listByEndpoint(app.id, ep.id, {
      status: MessageStatus.Fail,
    });
    expect(onlyFailed.data).toHaveLength(0);
  });

  test("messageAttempt.resend resolves; the receiver gets the same message again", async () => {
    const res = await svix.messageAttempt.resend(app.id, msg.id, ep.id);
    expect(res).toEqual({});
    await waitFor(() => rx.on(PATH).length === 2, 10_000, "the resent delivery");
    const again = rx.on(PATH)[1]!;
    expect(again.headers["webhook-id"]).toBe(msg.id);
    expect(again.body).toBe(rx.on(PATH)[0]!.body);
    expect(() => new Webhook(secret).verify(again.body, headersOf(again))).not.toThrow();

    await waitFor(
      async () => (await attemptsOf(msg.id)).length === 2,
      10_000,
      "the manual attempt record",
    );
    const [manual, scheduled] = await attemptsOf(msg.id);
    expect(manual!.triggerType).toBe(MessageAttemptTriggerType.Manual);
    expect(scheduled!.triggerType).toBe(MessageAttemptTriggerType.Scheduled);
    expect(manual!.status).toBe(MessageStatus.Success);
  });

  test("endpoint.rotateSecret: a new key; during the grace period both keys verify", async () => {
    await expect(svix.endpoint.rotateSecret(app.id, ep.id)).resolves.toBeUndefined();
    const next = (await svix.endpoint.getSecret(app.id, ep.id)).key;
    expect(next).toMatch(/^whsec_/);
    expect(next).not.toBe(secret);

    await svix.messageAttempt.resend(app.id, msg.id, ep.id);
    await waitFor(() => rx.on(PATH).length === 3, 10_000, "the delivery after rotation");
    const req = rx.on(PATH)[2]!;
    expect(headersOf(req)["webhook-signature"]!.split(" ")).toHaveLength(2);
    expect(() => new Webhook(next).verify(req.body, headersOf(req))).not.toThrow();
    expect(() => new Webhook(secret).verify(req.body, headersOf(req))).not.toThrow();
    secret = next;
    await waitFor(
      async () => (await attemptsOf(msg.id)).length === 3,
      10_000,
      "the third attempt record",
    );
  });

  test("endpoint.patch disabled: true; endpoint.get shows it; a later message is held for it, not sent", async () => {
    const patched = await svix.endpoint.patch(app.id, ep.id, { disabled: true });
    expect(patched.disabled).toBe(true);
    expect(patched.eventTypes).toEqual(["invoice.paid"]);
    const got = await svix.endpoint.get(app.id, ep.id);
    expect(got.disabled).toBe(true);
    expect(got.url).toBe(`${rx.url}${PATH}`);

    const later = await svix.message.create(app.id, {
      eventType: "invoice.paid",
      payload: { invoice: "in_3" },
    });
    // held while disabled (docs/delivery.md, "While an endpoint is disabled")
    const { rows } = await h.db.pool.query(
      "select status, attempt_count from deliveries where message_id = $1",
      [later.id],
    );
    expect(rows).toEqual([{ status: "pending", attempt_count: 0 }]);
  });

  test("application.list returns pages with data, iterator and done", async () => {
    const second = await svix.application.create({ name: "Globex" });
    const all = await svix.application.list();
    expect(all.data.map((a) => a.id)).toEqual([app.id, second.id]);
    expect(all.done).toBe(true);
    expect(all.iterator).toBe(second.id);

    const first = await svix.application.list({ limit: 1 });
    expect(first.data.map((a) => a.id)).toEqual([app.id]);
    expect(first.done).toBe(false);
    expect(first.iterator).toEqual(expect.any(String));
    const rest = await svix.application.list({ limit: 1, iterator: first.iterator });
    expect(rest.data.map((a) => a.id)).toEqual([second.id]);
    expect(rest.done).toBe(true);
    expect(validDate(rest.data[0]!.createdAt)).toBe(true);
  });

  test("errors: a 404 throws ApiException with code 404 and { code, detail }", async () => {
    const calls: [string, () => Promise<unknown>][] = [
      ["application.get", () => svix.application.get("no-such-app")],
      ["endpoint.get", () => svix.endpoint.get(app.id, "ep_nope")],
      ["message.get", () => svix.message.get(app.id, "msg_nope")],
      ["messageAttempt.resend", () => svix.messageAttempt.resend(app.id, "msg_nope", ep.id)],
    ];
    for (const [name, call] of calls) {
      const err = await call().then(
        () => null,
        (e: unknown) => e,
      );
      expect(err, name).toBeInstanceOf(ApiException);
      const apiErr = err as ApiException<{ code: string; detail: string }>;
      expect(apiErr.code, name).toBe(404);
      expect(apiErr.body).toEqual({ code: "not_found", detail: expect.any(String) });
    }
  });

  test("errors: a validation failure throws ApiException with a 4xx code", async () => {
    const err = await svix.application.create({ name: "" }).then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ApiException);
    const apiErr = err as ApiException<unknown>;
    expect(apiErr.code).toBeGreaterThanOrEqual(400);
    expect(apiErr.code).toBeLessThan(500);
  });

  test("a wrong API key throws ApiException 401", async () => {
    const { port } = h.api.server.address() as AddressInfo;
    const stranger = new Svix("not-a-key", { serverUrl: `http://127.0.0.1:${port}` });
    const err = await stranger.application.list().then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ApiException);
    expect((err as ApiException<unknown>).code).toBe(401);
  });

  test("messageAttempt.listAttemptedMessages (GET .../endpoint/{ep}/msg) exists", async () => {
    const page = await svix.messageAttempt.listAttemptedMessages(app.id, ep.id);
    expect(page.data.map((m) => m.id)).toContain(msg.id);
  });

  test("message.list filters by tag", async () => {
    const tagged = await svix.message.create(app.id, {
      eventType: "x",
      payload: {},
      tags: ["vip"],
    });
    await svix.message.create(app.id, { eventType: "x", payload: {} });
    const page = await svix.message.list(app.id, { tag: "vip" });
    expect(page.data.map((m) => m.id)).toEqual([tagged.id]);
  });

  test("message.create keeps payloadRetentionPeriod (days) or payloadRetentionHours as the message's expiry", async () => {
    const days = await svix.message.create(app.id, {
      eventType: "x",
      payload: {},
      payloadRetentionPeriod: 14,
    });
    const hours = await svix.message.create(app.id, {
      eventType: "x",
      payload: {},
      payloadRetentionHours: 6,
    });
    const plain = await svix.message.create(app.id, { eventType: "x", payload: {} });
    const { rows } = await h.db.pool.query(
      `select id, extract(epoch from expires_at - created_at)::int as seconds from messages where id = any($1)`,
      [[days.id, hours.id, plain.id]],
    );
    const seconds = new Map(rows.map((r) => [r.id, r.seconds]));
    // created_at is the transaction's start, expires_at counts from the statement: within a second
    expect(Math.abs(seconds.get(days.id) - 14 * 86_400)).toBeLessThanOrEqual(1);
    expect(Math.abs(seconds.get(hours.id) - 6 * 3_600)).toBeLessThanOrEqual(1);
    expect(seconds.get(plain.id)).toBeNull();
    await expect(
      svix.message.create(app.id, {
        eventType: "x",
        payload: {},
        payloadRetentionPeriod: 1,
        payloadRetentionHours: 1,
      }),
    ).rejects.toMatchObject({ code: 400 });
    await expect(
      svix.message.create(app.id, { eventType: "x", payload: {}, payloadRetentionPeriod: 0 }),
    ).rejects.toMatchObject({
      code: 422,
    });
  });

  test("message.create with application creates the app alongside", async () => {
    const newUid = `inline-${uid}`;
    await svix.message.create(newUid, {
      eventType: "x",
      payload: {},
      application: { name: "Inline", uid: newUid },
    });
    expect((await svix.application.get(newUid)).name).toBe("Inline");
  });

  test("eventType.list exists (the event-type catalog)", async () => {
    const page = await svix.eventType.list();
    expect(Array.isArray(page.data)).toBe(true);
  });
});

// Postback endpoints (README.md, Postbacks). The svix client sends only the fields of its
// own models: a URL template passes (it is a URL), hookrelay's postback fields do not, so
// they are set through hookrelay's API, CLI, dashboard or portal; the client then reads,
// patches and updates (PUT) such an endpoint without disturbing them.
describe("postback endpoints with the svix client", () => {
  test("endpoint.create with a URL template delivers to the rendered URL; a GET endpoint set up by the API keeps its method through endpoint.get and endpoint.patch", async () => {
    const pbApp = await svix.application.create({ name: "Postbacks", uid: `pb-${uid}` });
    const templated = await svix.endpoint.create(pbApp.id, {
      url: `${rx.url}/svix-pb?cid={click_id}&payout={payout}`,
    });
    expect(templated.url).toBe(`${rx.url}/svix-pb?cid={click_id}&payout={payout}`);
    const sent = await svix.message.create(pbApp.id, {
      eventType: "conversion",
      payload: { click_id: "c 1", payout: 7.5 },
    });
    await waitFor(
      () => rx.requests.some((r) => r.path === "/svix-pb?cid=c%201&payout=7.5"),
      10_000,
      "the templated delivery",
    );
    expect(rx.requests.find((r) => r.path.startsWith("/svix-pb"))!.headers["webhook-id"]).toBe(
      sent.id,
    );

    const made = await h.call("POST", `/api/v1/app/${pbApp.id}/endpoint`, {
      url: `${rx.url}/svix-get?cid={click_id}`,
      method: "GET",
      urlToken: "tok-123",
    });
    expect(made.status, JSON.stringify(made.body)).toBe(201);
    const got = await svix.endpoint.get(pbApp.id, made.body.id);
    expect(got.url).toBe(`${rx.url}/svix-get?cid={click_id}`);
    await svix.endpoint.patch(pbApp.id, made.body.id, { description: "patched by svix" });
    const after = await h.call("GET", `/api/v1/app/${pbApp.id}/endpoint/${made.body.id}`);
    expect(after.body).toMatchObject({
      description: "patched by svix",
      method: "GET",
      urlToken: "***",
    });
    // endpoint.upsert (svix 1: update) is a PUT without the postback fields: they stay
    await svix.endpoint.upsert(pbApp.id, made.body.id, {
      url: `${rx.url}/svix-get?cid={click_id}&v=2`,
      description: "updated by svix",
    });
    const updated = await h.call("GET", `/api/v1/app/${pbApp.id}/endpoint/${made.body.id}`);
    expect(updated.body).toMatchObject({
      url: `${rx.url}/svix-get?cid={click_id}&v=2`,
      description: "updated by svix",
      method: "GET",
      urlToken: "***",
    });
  });
});
