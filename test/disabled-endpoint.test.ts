/**
 * The disabled-endpoint contract (docs/delivery.md, "While an endpoint is disabled"): a
 * message sent while an endpoint is disabled gets its delivery row anyway. Held (the
 * default): pending, visible per endpoint, sent with its original webhook-id when the
 * endpoint is enabled, oldest first; after a manual disable and after a 410 Gone. Skipped
 * (whileDisabled "skip", on the endpoint or as the process default): canceled with
 * last_error_kind endpoint_disabled, shown as skipped, and not sent on enable.
 *
 * The in-process API and one worker on a test database, real HTTP receivers on 127.0.0.1.
 * "Nothing was sent" is checked without sleeping: a sentinel sent after the held messages
 * (to another endpoint, or to the same one once it is enabled) is delivered first, so a
 * claim ran after the held rows were due.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { loadConfig } from "../src/config.ts";
import { HookRelay } from "../src/library.ts";
import { purgeExpired } from "../src/ops/retention.ts";
import { SKIPPED_KIND } from "../src/queue/enqueue-message.ts";
import { type DashboardClient, dashboardClient } from "./helpers/dashboard-client.ts";
import {
  deliveryCalls,
  type ScriptedReceiver,
  startScriptedReceiver,
} from "./helpers/deliveries.ts";
import { buildTestApi, type Harness, startHarness } from "./helpers/harness.ts";
import { waitFor } from "./helpers/receiver.ts";

let h: Harness;
let rx: ScriptedReceiver;
let admin: DashboardClient;
/** an API on the same database whose process default is whileDisabled "skip" */
let skipApi: FastifyInstance;

beforeAll(async () => {
  rx = await startScriptedReceiver();
  h = await startHarness();
  h.startWorker();
  admin = dashboardClient(h.api);
  await admin.signIn(h.adminKey);
  skipApi = await buildTestApi({
    pool: h.db.pool,
    config: { ...h.config, delivery: { ...h.config.delivery, whileDisabled: "skip" } },
  });
});
afterAll(async () => {
  await skipApi?.close();
  await h?.close();
  await rx?.close();
});

const { newApp, newEndpoint, send, deliveryRow, waitForStatus } = deliveryCalls(() => h);
const ep = (appId: string, id: string) => `/api/v1/app/${appId}/endpoint/${id}`;

/** An app with endpoint A (one request at a time, so its order shows) and a sentinel B. */
async function setup(policy: Record<string, unknown> = {}) {
  const appId = await newApp();
  const pathA = rx.route();
  const pathB = rx.route();
  const a = await newEndpoint(appId, `${rx.url}${pathA}`, { maxInFlight: 1, ...policy });
  const b = await newEndpoint(appId, `${rx.url}${pathB}`);
  return { appId, a, b, pathA, pathB };
}

/** Sends n messages one after another (each its own transaction: distinct due times). */
async function sendEach(appId: string, n: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) ids.push(await send(appId, { i }));
  return ids;
}

/** The sentinel B got them all: a claim ran after every one of them was due. */
const sentinelGot = (path: string, n: number) =>
  waitFor(() => rx.on(path).length >= n, 15_000, "the sentinel endpoint's deliveries");

/** Endpoint A's deliveries as the API lists them (newest first). */
async function listedFor(appId: string, id: string) {
  const res = await h.call("GET", `${ep(appId, id)}/msg`);
  expect(res.status).toBe(200);
  return res.body.data as { id: string; deliveryStatus: string; statusText: string }[];
}

/** Waits until A has received `ids`, then checks they came in that order, as sent. */
async function expectReceivedInOrder(path: string, ids: string[]) {
  await waitFor(() => rx.on(path).length >= ids.length, 15_000, "the held deliveries");
  expect(rx.on(path).map((r) => r.headers["webhook-id"])).toEqual(ids);
}

describe("hold (the default)", () => {
  test("manual disable: 3 messages are held, listed pending, and sent in order with their webhook-id on enable", async () => {
    const { appId, a, pathA, pathB } = await setup();
    expect((await h.call("PATCH", ep(appId, a), { disabled: true })).status).toBe(200);

    const ids = await sendEach(appId, 3);
    await sentinelGot(pathB, 3);
    expect(rx.on(pathA)).toHaveLength(0);
    for (const id of ids)
      expect(await deliveryRow(id, a)).toMatchObject({ status: "pending", attempt_count: 0 });

    // the API shows each per endpoint: the endpoint's message list and the message's endpoints
    const listed = await listedFor(appId, a);
    expect(listed.map((m) => m.id)).toEqual([...ids].reverse());
    expect(listed.every((m) => m.deliveryStatus === "pending" && m.statusText === "pending")).toBe(
      true,
    );
    const perEndpoint = await h.call("GET", `/api/v1/app/${appId}/msg/${ids[0]}/endpoint`);
    expect(perEndpoint.body.data.find((d: { id: string }) => d.id === a)).toMatchObject({
      deliveryStatus: "pending",
      disabled: true,
      lastErrorKind: null,
    });

    // the dashboard counts them and names them held
    const page = await admin.get(`/dashboard/endpoints/${a}`);
    expect(page.body).toContain('<span data-testid="held">3 held while disabled</span>');
    expect(page.body).toContain("every message sent meanwhile wait for it (held)");
    const message = await admin.get(`/dashboard/messages/${ids[0]}`);
    expect(message.body).toContain("held (endpoint disabled)");

    expect((await h.call("PATCH", ep(appId, a), { disabled: false })).status).toBe(200);
    await expectReceivedInOrder(pathA, ids);
    for (const id of ids) await waitForStatus(id, a, "delivered");
  });

  test("410 Gone: the endpoint disables itself, later messages are held and sent in order when a PUT enables it", async () => {
    const appId = await newApp();
    let gone = true;
    const pathA = rx.route(() => ({ status: gone ? 410 : 200 }));
    const pathB = rx.route();
    const url = `${rx.url}${pathA}`;
    const a = await newEndpoint(appId, url, { maxInFlight: 1 });
    await newEndpoint(appId, `${rx.url}${pathB}`);

    const first = await send(appId, { first: true });
    expect((await waitForStatus(first, a, "dead_letter")).last_error_kind).toBe("gone");
    await waitFor(
      async () => (await h.call("GET", ep(appId, a))).body.disabledReason === "gone",
      15_000,
      "the 410 to disable the endpoint",
    );
    gone = false;

    const ids = await sendEach(appId, 3);
    await sentinelGot(pathB, 4);
    expect(rx.on(pathA)).toHaveLength(1);
    const listed = await listedFor(appId, a);
    expect(listed.filter((m) => m.deliveryStatus === "pending").map((m) => m.id)).toEqual(
      [...ids].reverse(),
    );

    // a PUT that leaves `disabled` out enables the endpoint, and that wakes the workers too
    expect((await h.call("PUT", ep(appId, a), { url, maxInFlight: 1 })).status).toBe(200);
    await waitFor(() => rx.on(pathA).length >= 4, 15_000, "the held deliveries");
    expect(
      rx
        .on(pathA)
        .slice(1)
        .map((r) => r.headers["webhook-id"]),
    ).toEqual(ids);
    // the dead letter stays one: a 410 is not retried by enabling
    expect((await deliveryRow(first, a))?.status).toBe("dead_letter");
  });
});

describe("skip", () => {
  test("an endpoint set to skip: rows are canceled endpoint_disabled, shown as skipped, and not sent on enable", async () => {
    const { appId, a, pathA, pathB } = await setup({ whileDisabled: "skip" });
    expect((await h.call("GET", ep(appId, a))).body.whileDisabled).toBe("skip");
    expect((await h.call("PATCH", ep(appId, a), { disabled: true })).status).toBe(200);

    const ids = await sendEach(appId, 3);
    await sentinelGot(pathB, 3);
    for (const id of ids)
      expect(await deliveryRow(id, a)).toMatchObject({
        status: "canceled",
        attempt_count: 0,
        last_error_kind: SKIPPED_KIND,
      });
    const perEndpoint = await h.call("GET", `/api/v1/app/${appId}/msg/${ids[0]}/endpoint`);
    expect(perEndpoint.body.data.find((d: { id: string }) => d.id === a)).toMatchObject({
      deliveryStatus: "canceled",
      statusText: "canceled",
      lastErrorKind: "endpoint_disabled",
      lastError: expect.stringContaining("skipped"),
    });
    expect((await listedFor(appId, a)).map((m) => m.deliveryStatus)).toEqual([
      "canceled",
      "canceled",
      "canceled",
    ]);
    expect((await admin.get(`/dashboard/messages/${ids[0]}`)).body).toContain(
      "skipped (endpoint disabled)",
    );
    const page = await admin.get(`/dashboard/endpoints/${a}`);
    expect(page.body).toContain('<span data-testid="held">0 held while disabled</span>');
    expect(page.body).toContain("messages sent meanwhile are recorded as skipped");

    // enabled from the dashboard: a message sent after it arrives, and nothing before it
    expect((await admin.post(`/dashboard/endpoints/${a}/enable`, {})).statusCode).toBe(303);
    const after = await send(appId, { after: true });
    await waitForStatus(after, a, "delivered");
    expect(rx.on(pathA).map((r) => r.headers["webhook-id"])).toEqual([after]);
    for (const id of ids) expect((await deliveryRow(id, a))?.status).toBe("canceled");
  });

  test("the process default skip applies to endpoints that set nothing; an endpoint's own hold wins", async () => {
    expect(loadConfig({ HOOKRELAY_WHILE_DISABLED: "skip" }).delivery.whileDisabled).toBe("skip");
    expect(loadConfig({}).delivery.whileDisabled).toBe("hold");
    expect(() => loadConfig({ HOOKRELAY_WHILE_DISABLED: "drop" })).toThrow(
      'HOOKRELAY_WHILE_DISABLED must be hold or skip, got "drop"',
    );

    const appId = await newApp();
    const plain = await newEndpoint(appId, `${rx.url}${rx.route()}`, { disabled: true });
    const holds = await newEndpoint(appId, `${rx.url}${rx.route()}`, {
      disabled: true,
      whileDisabled: "hold",
    });
    const res = await skipApi.inject({
      method: "POST",
      url: `/api/v1/app/${appId}/msg`,
      headers: { authorization: `Bearer ${h.adminKey}` },
      payload: { eventType: "test.event", payload: { x: 1 } },
    });
    expect(res.statusCode).toBe(202);
    const id = res.json().id;
    expect(await deliveryRow(id, plain)).toMatchObject({
      status: "canceled",
      last_error_kind: "endpoint_disabled",
    });
    expect((await deliveryRow(id, holds))?.status).toBe("pending");

    // the same server's own answer: hold (h's configuration)
    const held = await send(appId, { y: 1 });
    expect((await deliveryRow(held, plain))?.status).toBe("pending");
  });

  test("the library's send follows its whileDisabled option, hold unless set", async () => {
    const appId = await newApp();
    const off = await newEndpoint(appId, `${rx.url}${rx.route()}`, { disabled: true });
    const skipping = new HookRelay({ pool: h.db.pool, whileDisabled: "skip" });
    const holding = new HookRelay({ pool: h.db.pool });
    const skipped = await skipping.send(appId, { eventType: "test.event", payload: { a: 1 } });
    const kept = await holding.send(appId, { eventType: "test.event", payload: { b: 1 } });
    expect(skipped.deliveries).toBe(1);
    expect((await deliveryRow(skipped.messageId, off))?.status).toBe("canceled");
    expect((await deliveryRow(kept.messageId, off))?.status).toBe("pending");
    expect(() => new HookRelay({ pool: h.db.pool, whileDisabled: "drop" as "skip" })).toThrow(
      /whileDisabled must be/,
    );
  });
});

describe("what the docs say, and retention", () => {
  const read = (file: string) => readFileSync(path.join(import.meta.dirname, "..", file), "utf8");

  test("docs/delivery.md states both modes and README lists the process default", () => {
    const doc = read("docs/delivery.md");
    const section = doc.slice(doc.indexOf("## While an endpoint is disabled"));
    expect(section).toMatch(/^## While an endpoint is disabled\n/);
    expect(section).toContain("| `hold` (the default) | `pending`: held for the endpoint.");
    expect(section).toContain("| `skip` | `canceled`, `lastErrorKind` `endpoint_disabled`");
    expect(section).toContain("/replay-missing");
    expect(section).toContain("never deletes a message while any of its deliveries is\nqueued");
    expect(read("README.md")).toMatch(/\| `HOOKRELAY_WHILE_DISABLED` \| .* \| `hold` \|\n/);
  });

  test("retention keeps a held row's message and lets a skipped one's go", async () => {
    const holdApp = await newApp();
    const skipApp = await newApp();
    const url = `${rx.url}${rx.route()}`;
    await newEndpoint(holdApp, url, { disabled: true });
    await newEndpoint(skipApp, url, { disabled: true, whileDisabled: "skip" });
    const held = await send(holdApp, { kept: true });
    const skipped = await send(skipApp, { gone: true });
    // (every finished message of this file goes: this test runs last)
    await purgeExpired(h.db.pool, { payloadMs: 0, attemptsMs: 0, deadLetterMs: 0, batch: 1_000 });
    const { rows } = await h.db.pool.query("select id from messages where id = any ($1::text[])", [
      [held, skipped],
    ]);
    expect(rows.map((r) => r.id)).toEqual([held]);
  });
});
