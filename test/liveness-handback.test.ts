/**
 * The liveness hand-back in-process (docs/worker-liveness.md): releaseLostClaims leaves the
 * claims of a worker whose lock is held alone, hands back those of one whose lock is free
 * (rows due again with no attempt used, in-flight slots and the probe freed, a NOTIFY for
 * idle workers), exactly once under racing callers, and only when the caller may judge;
 * a worker whose own lock is not held claims nothing, and claims under its number once it
 * holds it again.
 */
import { randomUUID } from "node:crypto";
import pg from "pg";
import { afterAll, beforeAll, expect, test } from "vitest";
import { WORK_CHANNEL } from "../src/db/work-channel.ts";
import { makeHttpSender } from "../src/delivery/http-sender.ts";
import { silentLogger } from "../src/logger.ts";
import { claimDeliveries } from "../src/queue/claim-deliveries.ts";
import { enqueueMessage } from "../src/queue/enqueue-message.ts";
import { releaseLostClaims } from "../src/queue/release-deliveries.ts";
import { makeRedactor } from "../src/security/redact.ts";
import { makeSecretBox } from "../src/security/secret-box.ts";
import { makeSsrfGuard } from "../src/security/ssrf-guard.ts";
import { makeLiveness } from "../src/worker/liveness.ts";
import { makeWorker, type Worker } from "../src/worker/worker.ts";
import { type Harness, startHarness } from "./helpers/harness.ts";
import { inFlightOf } from "./helpers/in-flight.ts";
import { startReceiver, waitFor } from "./helpers/receiver.ts";
import { DEAD_URL, newApp, newEndpoint } from "./helpers/seeded-deliveries.ts";

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(() => h?.close());

const liveness = () => makeLiveness({ connectionString: h.db.url, logger: silentLogger });

async function claimAs(lock: number | null, limit = 10) {
  return claimDeliveries(h.db.pool, {
    workerId: `w-${lock}`,
    workerLock: lock,
    claimToken: randomUUID(),
    limit,
    defaultMaxInFlight: 20,
    defaultTimeoutMs: 60_000,
    leaseMarginMs: 30_000,
  });
}

async function endpointState(endpointId: string) {
  const { rows } = await h.db.pool.query(
    `select ${inFlightOf("h.endpoint_id")} as in_flight, h.circuit_state, h.probe_until <= now() as probe_free,
            (select count(*)::int from deliveries d where d.endpoint_id = h.endpoint_id and d.status = 'pending' and d.attempt_count = 0) as pending
     from endpoint_health h where h.endpoint_id = $1`,
    [endpointId],
  );
  return rows[0];
}

test("a dead worker's claims are handed back at once, slots and probe freed, with a NOTIFY; a live worker's are left alone", async () => {
  const appId = await newApp(h);
  // adaptive concurrency off: the next test's worker then tries all of their rows at once
  // (they fail and wait for a retry), so none is still due when the last test claims
  const plain = await newEndpoint(h, appId, {
    url: `${DEAD_URL}/plain`,
    adaptiveConcurrency: "off",
  });
  const appId2 = await newApp(h);
  const probed = await newEndpoint(h, appId2, {
    url: `${DEAD_URL}/probed`,
    adaptiveConcurrency: "off",
  });
  await h.db.pool.query(
    "update endpoint_health set circuit_state = 'open', opened_at = now(), open_until = now() where endpoint_id = $1",
    [probed.id],
  );
  for (let i = 0; i < 3; i++)
    await enqueueMessage(h.db.pool, { appId, eventType: "t", payload: "{}" }, 5);
  await enqueueMessage(h.db.pool, { appId: appId2, eventType: "t", payload: "{}" }, 5);

  const alive = liveness();
  const doomed = liveness();
  await alive.start();
  await doomed.start();
  try {
    expect(doomed.lock).not.toBe(alive.lock);
    const claimed = await claimAs(doomed.lock);
    expect(claimed).toHaveLength(4);
    expect(claimed.filter((c) => c.isProbe)).toHaveLength(1);
    expect(await endpointState(plain.id)).toMatchObject({ in_flight: 3, pending: 0 });
    expect(await endpointState(probed.id)).toMatchObject({
      circuit_state: "half_open",
      probe_free: false,
    });

    // Alive: nothing comes back, however often anyone looks.
    for (let i = 0; i < 3; i++)
      expect(await releaseLostClaims(h.db.pool, { checkOwners: true })).toBe(0);

    await doomed.stop();
    expect(doomed.held).toBe(false);
    // A caller not yet allowed to judge owners leaves them (the lease is far away).
    expect(await releaseLostClaims(h.db.pool, { checkOwners: false })).toBe(0);

    const listener = new pg.Client({ connectionString: h.db.url });
    await listener.connect();
    try {
      const notified = new Promise<void>((resolve) =>
        listener.once("notification", () => resolve()),
      );
      await listener.query(`listen ${WORK_CHANNEL}`);
      expect(await releaseLostClaims(h.db.pool, { checkOwners: true })).toBe(4);
      await notified;
    } finally {
      await listener.end();
    }
    expect(await endpointState(plain.id)).toMatchObject({ in_flight: 0, pending: 3 });
    expect(await endpointState(probed.id)).toMatchObject({
      in_flight: 0,
      pending: 1,
      probe_free: true,
    });
    expect((await h.db.pool.query("select 1 from claims")).rowCount).toBe(0);

    // The freed probe is claimable again at once, and a live owner's claim stays put.
    const again = await claimAs(alive.lock);
    expect(again).toHaveLength(4);
    expect(again.filter((c) => c.isProbe)).toHaveLength(1);
    expect(await releaseLostClaims(h.db.pool, { checkOwners: true })).toBe(0);
  } finally {
    await alive.stop();
    await doomed.stop();
  }
  // Now that owner is gone too; two workers looking at once hand its rows back once.
  const counts = await Promise.all([
    releaseLostClaims(h.db.pool, { checkOwners: true }),
    releaseLostClaims(h.db.pool, { checkOwners: true }),
  ]);
  expect(counts[0]! + counts[1]!).toBe(4);
  expect(await endpointState(plain.id)).toMatchObject({ in_flight: 0, pending: 3 });
});

test("a worker claims nothing while its own lock is not held, and under its number once it holds it again", async () => {
  const rx = await startReceiver(() => ({ status: 200, delayMs: 500 }));
  const appId = await newApp(h);
  await newEndpoint(h, appId, { url: `${rx.url}/back` });
  const sender = makeHttpSender({ ssrfGuard: makeSsrfGuard({ allowlist: ["127.0.0.0/8"] }) });
  let worker: Worker | null = null;
  const own = makeLiveness({
    connectionString: h.db.url,
    logger: silentLogger,
    onHeld: () => worker?.wake(),
  });
  await own.start();
  const lock = own.lock;
  await own.stop();
  // each turn of the worker's loop hands lost claims back first, reading its clock
  let turns = 0;
  try {
    worker = makeWorker({
      pool: h.db.pool,
      sender,
      config: { delivery: h.config.delivery, health: h.config.health, worker: h.config.worker },
      logger: silentLogger,
      secretBox: makeSecretBox(undefined),
      redactor: makeRedactor(),
      liveness: own,
      clock: () => {
        turns++;
        return null;
      },
    });
    worker.start();
    const { messageId } = await enqueueMessage(
      h.db.pool,
      { appId, eventType: "t", payload: "{}" },
      5,
    );
    // Three turns of its loop after the message is there, without a claim.
    const from = turns;
    await waitFor(() => turns >= from + 3, 10_000, "three turns of the worker's loop");
    expect(rx.requests).toHaveLength(0);
    const { rows } = await h.db.pool.query("select status from deliveries where message_id = $1", [
      messageId,
    ]);
    expect(rows).toEqual([{ status: "pending" }]);

    await own.start();
    worker.wake();
    expect(own.lock).toBe(lock);
    await waitFor(() => rx.requests.length === 1, 10_000, "the request once the lock is held");
    const { rows: claims } = await h.db.pool.query(
      "select c.worker_lock from claims c join deliveries d on d.id = any (c.delivery_ids) where d.message_id = $1",
      [messageId],
    );
    expect(claims).toEqual([{ worker_lock: lock }]);
    await waitFor(
      async () =>
        (await h.db.pool.query("select status from deliveries where message_id = $1", [messageId]))
          .rows[0].status === "delivered",
      10_000,
      "delivered",
    );
  } finally {
    await worker?.stop();
    await own.stop();
    await sender.close();
    await rx.close();
  }
});

test("a handed-back delivery goes to the head of its endpoint's queue, ahead of rows that came due while it was held", async () => {
  // The earlier tests' failed rows come due again after their retry delay and circuit
  // cooldown, which a loaded machine can reach before the claims below: their endpoints are
  // disabled, so this test claims its own rows only.
  await h.db.pool.query("update endpoints set disabled = true");
  const appId = await newApp(h);
  const ep = await newEndpoint(h, appId, { url: `${DEAD_URL}/head` });
  const first = await enqueueMessage(h.db.pool, { appId, eventType: "t", payload: "{}" }, 5);
  const doomed = liveness();
  await doomed.start();
  try {
    expect((await claimAs(doomed.lock)).map((c) => c.messageId)).toEqual([first.messageId]);
  } finally {
    await doomed.stop();
  }
  // While the dead worker held it, a backlog came due behind it.
  const later: string[] = [];
  for (let i = 0; i < 5; i++)
    later.push(
      (await enqueueMessage(h.db.pool, { appId, eventType: "t", payload: "{}" }, 5)).messageId,
    );
  expect(await releaseLostClaims(h.db.pool, { checkOwners: true })).toBe(1);
  const { rows } = await h.db.pool.query<{ message_id: string }>(
    "select message_id from deliveries where endpoint_id = $1 and status = 'pending' order by next_attempt_at, id",
    [ep.id],
  );
  expect(rows.map((r) => r.message_id)).toEqual([first.messageId, ...later]);
  expect((await claimAs(null, 1)).map((c) => c.messageId)).toEqual([first.messageId]);
});
