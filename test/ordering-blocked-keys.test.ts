/**
 * Blocked ordering keys through the API (docs/delivery.md, "Ordering"), with a worker in
 * this process and a real receiver on 127.0.0.1: GET .../ordering-keys/blocked lists the
 * keys whose head holds them back (a dead head on a blocking endpoint, or a head waiting for
 * its retry with deliveries behind it), a page at a time; retry sends the head again first
 * and skip cancels it (a dead letter too), and either way the rest of the key then goes in
 * order. The public cancel route still refuses a dead letter.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { publicIdsOf } from "../src/ids-public-key.ts";
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

const arrivals = (path: string): number[] => rx.on(path).map((r) => JSON.parse(r.body).n);

/** An endpoint whose receiver answers 500 to the message numbers `failing` holds. */
async function endpointFailing(failing: Set<number>, policy: Record<string, unknown>) {
  const path = rx.route((req) => ({ status: failing.has(JSON.parse(req.body).n) ? 500 : 200 }));
  const appId = await newApp();
  const endpointId = await newEndpoint(appId, `${rx.url}${path}`, policy);
  const sendAll = async (list: { n: number; key?: string }[]) => {
    const ids: string[] = [];
    for (const m of list)
      ids.push(await send(appId, { n: m.n }, m.key === undefined ? {} : { orderingKey: m.key }));
    return ids;
  };
  const base = `/api/v1/app/${appId}/endpoint/${endpointId}/ordering-keys/blocked`;
  return { appId, endpointId, path, sendAll, base };
}

const publicDelivery = async (id: number) => (await publicIdsOf(h.db.pool)).format("delivery", id);

describe("a dead head on a blocking endpoint", () => {
  test("is listed (key, head, why, since when, how many wait); skip cancels it and the key goes on in order", async () => {
    const failing = new Set([1]);
    const ep = await endpointFailing(failing, { maxAttempts: 1 });
    const [head, k2, k3, l1] = await ep.sendAll([
      { n: 1, key: "k" },
      { n: 2, key: "k" },
      { n: 3, key: "k" },
      { n: 4, key: "l" },
    ]);
    const dead = await waitForStatus(head!, ep.endpointId, "dead_letter");
    await waitForStatus(l1!, ep.endpointId, "delivered");
    const { rows } = await h.db.pool.query("select updated_at from deliveries where id = $1", [
      dead.id,
    ]);
    const list = await h.call("GET", ep.base);
    expect(list.status, JSON.stringify(list.body)).toBe(200);
    expect(list.body).toMatchObject({ done: true, prevIterator: null });
    expect(list.body.data).toEqual([
      {
        key: "k",
        wholeEndpoint: false,
        deliveryId: await publicDelivery(Number(dead.id)),
        msgId: head,
        reason: "dead_letter",
        since: rows[0].updated_at.toISOString(),
        nextAttemptAt: null,
        attemptCount: 1,
        lastErrorKind: dead.last_error_kind,
        lastStatusCode: 500,
        lastError: expect.any(String),
        waiting: 2,
      },
    ]);
    // the public cancel route keeps refusing a dead letter
    const cancel = await h.call(
      "POST",
      `/api/v1/deliveries/${list.body.data[0].deliveryId}/cancel`,
    );
    expect(cancel.status).toBe(409);
    // a later delivery of the key is no blocked head
    const k2row = await deliveryRow(k2!, ep.endpointId);
    const notHead = await h.call(
      "POST",
      `${ep.base}/${await publicDelivery(Number(k2row!.id))}/skip`,
    );
    expect(notHead.status).toBe(409);
    expect(notHead.body.code).toBe("conflict");

    const skip = await h.call("POST", `${ep.base}/${list.body.data[0].deliveryId}/skip`);
    expect(skip.status, JSON.stringify(skip.body)).toBe(200);
    expect(skip.body).toEqual({
      deliveryId: list.body.data[0].deliveryId,
      key: "k",
      status: "canceled",
    });
    await waitForStatus(k3!, ep.endpointId, "delivered");
    expect((await deliveryRow(k2!, ep.endpointId))?.status).toBe("delivered");
    expect((await deliveryRow(head!, ep.endpointId))?.status).toBe("canceled");
    expect(arrivals(ep.path).filter((n) => n !== 4)).toEqual([1, 2, 3]);
    expect((await h.call("GET", ep.base)).body.data).toEqual([]);
    // done: it is no head any more
    expect((await h.call("POST", `${ep.base}/${skip.body.deliveryId}/skip`)).status).toBe(409);
  });

  test("retry requeues it: the head goes first, then the rest of its key in order", async () => {
    const failing = new Set([1]);
    const ep = await endpointFailing(failing, { maxAttempts: 1 });
    const [head, k2] = await ep.sendAll([
      { n: 1, key: "k" },
      { n: 2, key: "k" },
    ]);
    await waitForStatus(head!, ep.endpointId, "dead_letter");
    const [blocked] = (await h.call("GET", ep.base)).body.data;
    failing.clear();
    const retry = await h.call("POST", `${ep.base}/${blocked.deliveryId}/retry`);
    expect(retry.status, JSON.stringify(retry.body)).toBe(200);
    expect(retry.body).toEqual({ deliveryId: blocked.deliveryId, key: "k", status: "pending" });
    await waitForStatus(k2!, ep.endpointId, "delivered");
    expect((await deliveryRow(head!, ep.endpointId))?.status).toBe("delivered");
    expect(arrivals(ep.path)).toEqual([1, 1, 2]);
  });

  test("a FIFO endpoint's one key is the whole endpoint; an endpoint that skips dead heads lists none", async () => {
    const fifo = await endpointFailing(new Set([1]), { maxAttempts: 1, ordering: "fifo" });
    const [head] = await fifo.sendAll([{ n: 1, key: "x" }, { n: 2 }]);
    await waitForStatus(head!, fifo.endpointId, "dead_letter");
    const listed = (await h.call("GET", fifo.base)).body.data;
    expect(listed).toMatchObject([{ key: "", wholeEndpoint: true, msgId: head, waiting: 1 }]);

    const skips = await endpointFailing(new Set([1]), {
      maxAttempts: 1,
      orderedDeadLetter: "skip",
    });
    const [dead, next] = await skips.sendAll([
      { n: 1, key: "k" },
      { n: 2, key: "k" },
    ]);
    await waitForStatus(dead!, skips.endpointId, "dead_letter");
    await waitForStatus(next!, skips.endpointId, "delivered");
    expect((await h.call("GET", skips.base)).body.data).toEqual([]);
  });

  test("pages by head: limit and iterator; another endpoint's delivery is 404", async () => {
    const ep = await endpointFailing(new Set([1, 2]), { maxAttempts: 1 });
    const [a, b] = await ep.sendAll([
      { n: 1, key: "a" },
      { n: 2, key: "b" },
    ]);
    await waitForStatus(a!, ep.endpointId, "dead_letter");
    await waitForStatus(b!, ep.endpointId, "dead_letter");
    const first = await h.call("GET", `${ep.base}?limit=1`);
    expect(first.body).toMatchObject({ done: false, data: [{ key: "a", waiting: 0 }] });
    const second = await h.call("GET", `${ep.base}?limit=1&iterator=${first.body.iterator}`);
    expect(second.body).toMatchObject({ done: true, data: [{ key: "b" }] });
    const other = await endpointFailing(new Set(), {});
    const res = await h.call("POST", `${other.base}/${first.body.data[0].deliveryId}/retry`);
    expect(res.status).toBe(404);
    expect(res.body.code).toBe("not_found");
  });
});

describe("a head waiting for its retry", () => {
  test("is listed as retrying until its next attempt while others wait; retry makes it due now", async () => {
    const failing = new Set([1]);
    const ep = await endpointFailing(failing, {
      retryBaseMs: 600_000,
      retryCapMs: 600_000,
      maxAttempts: 10,
    });
    const [head, k2] = await ep.sendAll([
      { n: 1, key: "k" },
      { n: 2, key: "k" },
    ]);
    await waitFor(async () => (await deliveryRow(head!, ep.endpointId))?.status === "failed");
    const { rows } = await h.db.pool.query(
      "select next_attempt_at from deliveries where message_id = $1",
      [head],
    );
    const [blocked] = (await h.call("GET", ep.base)).body.data;
    expect(blocked).toMatchObject({
      key: "k",
      msgId: head,
      reason: "retrying",
      nextAttemptAt: rows[0].next_attempt_at.toISOString(),
      lastStatusCode: 500,
      waiting: 1,
    });
    failing.clear();
    const retry = await h.call("POST", `${ep.base}/${blocked.deliveryId}/retry`);
    expect(retry.status, JSON.stringify(retry.body)).toBe(200);
    expect(retry.body.status).toBe("failed");
    await waitForStatus(k2!, ep.endpointId, "delivered");
    expect((await deliveryRow(head!, ep.endpointId))?.status).toBe("delivered");
    expect(arrivals(ep.path)).toEqual([1, 1, 2]);
  });

  test("skip cancels it before its retry and the next of its key goes; a failed head with nothing behind is not listed", async () => {
    const ep = await endpointFailing(new Set([1, 3]), {
      retryBaseMs: 600_000,
      retryCapMs: 600_000,
      maxAttempts: 10,
    });
    const [head, k2, alone] = await ep.sendAll([
      { n: 1, key: "k" },
      { n: 2, key: "k" },
      { n: 3, key: "alone" },
    ]);
    await waitFor(async () => (await deliveryRow(head!, ep.endpointId))?.status === "failed");
    await waitFor(async () => (await deliveryRow(alone!, ep.endpointId))?.status === "failed");
    const listed = (await h.call("GET", ep.base)).body.data;
    expect(listed.map((k: { key: string }) => k.key)).toEqual(["k"]);
    const skip = await h.call("POST", `${ep.base}/${listed[0].deliveryId}/skip`);
    expect(skip.body).toMatchObject({ key: "k", status: "canceled" });
    await waitForStatus(k2!, ep.endpointId, "delivered");
    expect((await deliveryRow(head!, ep.endpointId))?.status).toBe("canceled");
    expect(arrivals(ep.path).filter((n) => n !== 3)).toEqual([1, 2]);
  });
});
