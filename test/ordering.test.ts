/**
 * Ordered delivery (docs/delivery.md, "Ordering") with a worker in this process and a real
 * receiver on 127.0.0.1: per (endpoint, orderingKey) one delivery at a time in acceptance
 * order, across retries; a dead-lettered head blocks its key (orderedDeadLetter block, the
 * default) or lets the next go (skip); other keys and unordered messages are not held back;
 * a FIFO endpoint is one key, and switching to FIFO orders the rows already queued; bad
 * keys are refused; a resend's new row keeps its message's key. test/ordering-workers.test.ts runs the same rule under load with
 * worker processes, one of them killed.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { HookRelay } from "../src/library.ts";
import { claimableAt } from "./helpers/claimable.ts";
import {
  deliveryCalls,
  type ScriptedReceiver,
  startScriptedReceiver,
} from "./helpers/deliveries.ts";
import { type Harness, startHarness } from "./helpers/harness.ts";
import { waitFor } from "./helpers/receiver.ts";

let h: Harness;
let rx: ScriptedReceiver;
const { newApp, newEndpoint, send, deliveryRow, waitForStatus } = deliveryCalls(() => h);

beforeAll(async () => {
  rx = await startScriptedReceiver();
  h = await startHarness();
  h.startWorker();
});
afterAll(async () => {
  await h?.close();
  await rx?.close();
});

/** The `n` of each request to `path`, in arrival order (the payload carries it). */
const arrivals = (path: string): number[] => rx.on(path).map((r) => JSON.parse(r.body).n);

/** Sends messages with payload {n} one after another (each accepted before the next). */
async function sendAll(appId: string, list: { n: number; key?: string }[]): Promise<string[]> {
  const ids: string[] = [];
  for (const m of list)
    ids.push(await send(appId, { n: m.n }, m.key === undefined ? {} : { orderingKey: m.key }));
  return ids;
}

/** An endpoint at a fresh receiver path whose script fails the requests `fail` picks. */
async function endpointFailing(
  fail: (n: number, seen: number) => number | null,
  policy: Record<string, unknown> = {},
) {
  const seen = new Map<number, number>();
  const path = rx.route((req) => {
    const n = JSON.parse(req.body).n as number;
    const count = seen.get(n) ?? 0;
    seen.set(n, count + 1);
    const status = fail(n, count);
    return { status: status ?? 200 };
  });
  const appId = await newApp();
  const endpointId = await newEndpoint(appId, `${rx.url}${path}`, policy);
  return { appId, endpointId, path };
}

describe("an ordering key", () => {
  test("a key's deliveries go one at a time in send order across retries; other keys are not held back", async () => {
    // message 1 of key a fails twice, message 3 of key b once; a's 2 and 3 wait for a's 1
    const { appId, endpointId, path } = await endpointFailing(
      (n, seen) => ((n === 1 && seen < 2) || (n === 3 && seen < 1) ? 500 : null),
      { retryBaseMs: 0, retryCapMs: 50 },
    );
    const ids = await sendAll(appId, [
      { n: 1, key: "a" },
      { n: 2, key: "a" },
      { n: 3, key: "b" },
      { n: 4, key: "a" },
      { n: 5, key: "b" },
      { n: 6 },
    ]);
    for (const id of ids) await waitForStatus(id, endpointId, "delivered");
    const got = arrivals(path);
    expect(got.filter((n) => [1, 2, 4].includes(n))).toEqual([1, 1, 1, 2, 4]);
    expect(got.filter((n) => [3, 5].includes(n))).toEqual([3, 3, 5]);
  });

  test("a key waiting in its retry schedule holds only that key: unordered and other keys go", async () => {
    // message 1 (key k) fails and waits a minute for its retry
    const { appId, endpointId, path } = await endpointFailing((n) => (n === 1 ? 500 : null), {
      retryBaseMs: 60_000,
      retryCapMs: 60_000,
      maxAttempts: 10,
    });
    const [k1, k2, other, unordered] = await sendAll(appId, [
      { n: 1, key: "k" },
      { n: 2, key: "k" },
      { n: 3, key: "other" },
      { n: 4 },
    ]);
    await waitForStatus(other!, endpointId, "delivered");
    await waitForStatus(unordered!, endpointId, "delivered");
    await waitFor(async () => (await deliveryRow(k1!, endpointId))?.status === "failed");
    // k's second message is neither sent nor claimable while its head waits
    const k2row = await deliveryRow(k2!, endpointId);
    expect(k2row).toMatchObject({ status: "pending", attempt_count: 0 });
    // (the head's retry is due at a random point of the next minute: full jitter) whenever
    // a claim runs, the head alone may be taken, never the message behind it
    const k1row = await deliveryRow(k1!, endpointId);
    for (const at of [1_000, 30_000, 120_000]) {
      const claimable = await claimableAt(h, endpointId, new Date(Date.now() + at));
      expect(claimable.every((id) => String(id) === String(k1row!.id))).toBe(true);
      expect(claimable.map(String)).not.toContain(String(k2row!.id));
    }
    expect(await claimableAt(h, endpointId, new Date(Date.now() + 120_000))).toEqual([
      String(k1row!.id),
    ]);
    expect(arrivals(path)).not.toContain(2);
  });

  test("unordered messages are not ordered: a later one goes while an earlier one waits for its retry", async () => {
    const { appId, endpointId } = await endpointFailing((n) => (n === 1 ? 500 : null), {
      retryBaseMs: 60_000,
      retryCapMs: 60_000,
    });
    const [first, second] = await sendAll(appId, [{ n: 1 }, { n: 2 }]);
    await waitForStatus(second!, endpointId, "delivered");
    expect((await deliveryRow(first!, endpointId))?.status).toMatch(/^(failed|in_flight)$/);
  });
});

describe("a dead-lettered head", () => {
  test("block (the default): the key waits, other keys go; a requeue sends the head, then the rest in order", async () => {
    let headFails = true;
    const { appId, endpointId, path } = await endpointFailing(
      (n) => (n === 1 && headFails ? 500 : null),
      { maxAttempts: 1 },
    );
    const [head, k2, k3, l1, l2] = await sendAll(appId, [
      { n: 1, key: "k" },
      { n: 2, key: "k" },
      { n: 3, key: "k" },
      { n: 4, key: "l" },
      { n: 5, key: "l" },
    ]);
    await waitForStatus(head!, endpointId, "dead_letter");
    await waitForStatus(l1!, endpointId, "delivered");
    await waitForStatus(l2!, endpointId, "delivered");
    for (const id of [k2!, k3!])
      expect(await deliveryRow(id, endpointId)).toMatchObject({
        status: "pending",
        attempt_count: 0,
      });
    expect(await claimableAt(h, endpointId)).toEqual([]);
    expect(arrivals(path).filter((n) => n === 2 || n === 3)).toEqual([]);

    // the operator retries the head: it goes first, then the key's next ones in order
    headFails = false;
    const { id: headRow } = (await deliveryRow(head!, endpointId))!;
    const res = await h.call("POST", "/api/v1/dead-letters/requeue", {
      deliveryId: String(headRow),
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    await waitForStatus(k3!, endpointId, "delivered");
    expect(arrivals(path).filter((n) => n <= 3)).toEqual([1, 1, 2, 3]);
  });

  test("skip: the next message of the key goes", async () => {
    const { appId, endpointId, path } = await endpointFailing((n) => (n === 1 ? 500 : null), {
      maxAttempts: 1,
      orderedDeadLetter: "skip",
    });
    const [head, k2, k3] = await sendAll(appId, [
      { n: 1, key: "k" },
      { n: 2, key: "k" },
      { n: 3, key: "k" },
    ]);
    await waitForStatus(k3!, endpointId, "delivered");
    expect((await deliveryRow(head!, endpointId))?.status).toBe("dead_letter");
    expect((await deliveryRow(k2!, endpointId))?.status).toBe("delivered");
    expect(arrivals(path)).toEqual([1, 2, 3]);
  });
});

describe("a new row for an ordered message", () => {
  test("a resend to an endpoint the message had no delivery for writes it with its key: it waits behind the key's dead head", async () => {
    const appId = await newApp();
    const first = await send(appId, { n: 1 }, { orderingKey: "k" });
    // an endpoint created after the first message, whose key k is blocked by a dead head
    const path = rx.route((req) => ({ status: JSON.parse(req.body).n === 2 ? 500 : 200 }));
    const endpointId = await newEndpoint(appId, `${rx.url}${path}`, { maxAttempts: 1 });
    const head = await send(appId, { n: 2 }, { orderingKey: "k" });
    await waitForStatus(head, endpointId, "dead_letter");
    const res = await h.call(
      "POST",
      `/api/v1/app/${appId}/msg/${first}/endpoint/${endpointId}/resend`,
    );
    expect(res.status, JSON.stringify(res.body)).toBeLessThan(300);
    expect(await deliveryRow(first, endpointId)).toMatchObject({ status: "pending" });
    expect(await claimableAt(h, endpointId)).toEqual([]);
    const { rows } = await h.db.pool.query(
      "select ordering_key from deliveries where message_id = $1 and endpoint_id = $2",
      [first, endpointId],
    );
    expect(rows).toEqual([{ ordering_key: "k" }]);
  });
});

describe("a FIFO endpoint", () => {
  test("every message is one key, whatever its own key: one at a time in acceptance order", async () => {
    const { appId, endpointId, path } = await endpointFailing(
      (n, seen) => (n === 2 && seen < 2 ? 503 : null),
      { ordering: "fifo", retryBaseMs: 0, retryCapMs: 50 },
    );
    const ids = await sendAll(appId, [
      { n: 1 },
      { n: 2, key: "x" },
      { n: 3 },
      { n: 4, key: "y" },
      { n: 5 },
    ]);
    for (const id of ids) await waitForStatus(id, endpointId, "delivered");
    expect(arrivals(path)).toEqual([1, 2, 2, 2, 3, 4, 5]);
  });

  test("switching to FIFO orders the rows already queued, by acceptance", async () => {
    const { appId, endpointId, path } = await endpointFailing(
      (n, seen) => (n === 1 && seen < 2 ? 500 : null),
      { disabled: true, retryBaseMs: 0, retryCapMs: 50 },
    );
    const ids = await sendAll(appId, [{ n: 1 }, { n: 2 }, { n: 3, key: "z" }, { n: 4 }]);
    const ep = `/api/v1/app/${appId}/endpoint/${endpointId}`;
    expect((await h.call("PATCH", ep, { ordering: "fifo" })).status).toBe(200);
    const { rows } = await h.db.pool.query(
      "select distinct ordering_key from deliveries where endpoint_id = $1",
      [endpointId],
    );
    expect(rows).toEqual([{ ordering_key: "" }]);
    expect((await h.call("PATCH", ep, { disabled: false })).status).toBe(200);
    for (const id of ids) await waitForStatus(id, endpointId, "delivered");
    expect(arrivals(path)).toEqual([1, 1, 1, 2, 3, 4]);
  });
});

describe("bad input", () => {
  test("orderingKey must be a string of 1 to 128 characters (422 validation_error naming it)", async () => {
    const appId = await newApp();
    for (const orderingKey of ["", "k".repeat(129), 7, ["a"], { a: 1 }, true]) {
      const res = await h.call("POST", `/api/v1/app/${appId}/msg`, {
        eventType: "test.event",
        payload: {},
        orderingKey,
      });
      expect(res.status, JSON.stringify(orderingKey)).toBe(422);
      expect(res.body.code).toBe("validation_error");
      expect(res.body.detail).toContain("orderingKey");
    }
    // 128 characters, counted as characters (an emoji is one)
    for (const orderingKey of ["k".repeat(128), "🔑".repeat(128), null]) {
      const res = await h.call("POST", `/api/v1/app/${appId}/msg`, {
        eventType: "test.event",
        payload: {},
        orderingKey,
      });
      expect(res.status, JSON.stringify(res.body)).toBe(202);
      // the answer and the message's reads show the key
      expect(res.body.orderingKey).toBe(orderingKey);
      const read = await h.call("GET", `/api/v1/app/${appId}/msg/${res.body.id}`);
      expect(read.body.orderingKey).toBe(orderingKey);
    }
    const page = await h.call("GET", `/api/v1/app/${appId}/msg`);
    expect(page.body.data.map((m: { orderingKey: string | null }) => m.orderingKey)).toEqual([
      null,
      "🔑".repeat(128),
      "k".repeat(128),
    ]);
  });

  test("the library's send() refuses the same keys and stores a good one", async () => {
    const appId = await newApp();
    const relay = new HookRelay({ pool: h.db.pool });
    for (const orderingKey of ["", "k".repeat(129), 7 as unknown as string])
      await expect(
        relay.send(appId, { eventType: "test.event", payload: {}, orderingKey }),
      ).rejects.toMatchObject({ code: "validation_error" });
    const sent = await relay.send(appId, {
      eventType: "test.event",
      payload: {},
      orderingKey: "lib",
    });
    const { rows } = await h.db.pool.query("select ordering_key from messages where id = $1", [
      sent.messageId,
    ]);
    expect(rows).toEqual([{ ordering_key: "lib" }]);
    await relay.close();
  });

  test("an endpoint's ordering and orderedDeadLetter take only their words", async () => {
    const appId = await newApp();
    for (const body of [{ ordering: "lifo" }, { orderedDeadLetter: "maybe" }, { ordering: 1 }]) {
      const res = await h.call("POST", `/api/v1/app/${appId}/endpoint`, {
        url: `${rx.url}/x`,
        ...body,
      });
      expect(res.status, JSON.stringify(body)).toBe(422);
      expect(res.body.code).toBe("validation_error");
    }
  });
});
