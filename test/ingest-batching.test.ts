/**
 * API ingest writes concurrent requests' messages together (group commit). Whatever lands
 * in one batch, each request must get its own answer: repeated eventIds inside one batch
 * resolve to one message, and fan-out counts stay per message. The batch's commit is what
 * wakes the workers.
 */
import pg from "pg";
import { afterAll, beforeAll, expect, test } from "vitest";
import type { Pool } from "../src/db/pool.ts";
import { WORK_CHANNEL } from "../src/db/work-channel.ts";
import { ID_PREFIX, newId } from "../src/ids.ts";
import { silentLogger } from "../src/logger.ts";
import { makeEnqueueBatcher } from "../src/queue/enqueue-batcher.ts";
import { startRuntime } from "../src/runtime.ts";
import { makeRedactor } from "../src/security/redact.ts";
import { type Harness, startHarness, testConfig } from "./helpers/harness.ts";
import { waitFor } from "./helpers/receiver.ts";

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(() => h.close());

test("concurrent creates with repeated eventIds yield one message per eventId", async () => {
  const app = await h.call("POST", "/api/v1/app", { name: "batch" });
  await h.call("POST", `/api/v1/app/${app.body.id}/endpoint`, {
    url: "https://93.184.215.14/a",
    eventTypes: ["a"],
  });
  await h.call("POST", `/api/v1/app/${app.body.id}/endpoint`, { url: "https://93.184.215.14/b" });
  const calls = Array.from({ length: 60 }, (_, i) =>
    h.call("POST", `/api/v1/app/${app.body.id}/msg`, {
      eventType: i % 2 === 0 ? "a" : "b",
      eventId: `e${i % 12}`,
      payload: { i },
    }),
  );
  const results = await Promise.all(calls);
  expect(results.filter((r) => r.status === 202)).toHaveLength(12);
  expect(results.filter((r) => r.status === 200)).toHaveLength(48);
  const byEvent = new Map<string, Set<string>>();
  for (const r of results) {
    const set = byEvent.get(r.body.eventId) ?? new Set<string>();
    set.add(r.body.id);
    byEvent.set(r.body.eventId, set);
  }
  expect([...byEvent.values()].every((ids) => ids.size === 1)).toBe(true);
  const { rows } = await h.db.pool.query(
    `select m.event_type, count(d.id)::int as deliveries
     from messages m left join deliveries d on d.message_id = m.id
     where m.app_id = $1 group by m.id, m.event_type`,
    [app.body.id],
  );
  expect(rows).toHaveLength(12);
  // "a" goes to both endpoints, "b" only to the unfiltered one
  for (const r of rows) expect(r.deliveries).toBe(r.event_type === "a" ? 2 : 1);
});

/** A notification payload of the test's own (the service's are empty). */
const FENCE = "test-fence";

test("an accepted message wakes listening workers at its commit; a scheduled one does not", async () => {
  const app = await h.call("POST", "/api/v1/app", { name: "wake" });
  await h.call("POST", `/api/v1/app/${app.body.id}/endpoint`, { url: "https://93.184.215.14/w" });
  const listener = new pg.Client({ connectionString: h.db.url });
  await listener.connect();
  try {
    const seen: boolean[] = [];
    /** every notification's payload, in the order they arrive */
    const arrived: string[] = [];
    listener.on("notification", (n) => {
      arrived.push(n.payload ?? "");
      if (n.payload === FENCE) return;
      // what a woken worker would claim must already be committed
      void h.db.pool
        .query("select count(*)::int as n from messages where app_id = $1 and event_type = 'now'", [
          app.body.id,
        ])
        .then((r) => seen.push(r.rows[0].n > 0));
    });
    await listener.query(`listen ${WORK_CHANNEL}`);
    const later = new Date(Date.now() + 3_600_000).toISOString();
    const scheduled = await h.call("POST", `/api/v1/app/${app.body.id}/msg`, {
      eventType: "later",
      payload: {},
      deliverAt: later,
    });
    expect(scheduled.status).toBe(202);
    // Notifications arrive in commit order: one of the test's own, sent after that commit,
    // comes after any the scheduled message sent, so the first to arrive must be it.
    await h.db.pool.query("select pg_notify($1, $2)", [WORK_CHANNEL, FENCE]);
    await waitFor(() => arrived.includes(FENCE), 5_000, "the test's own notification");
    expect(arrived).toEqual([FENCE]);
    expect(seen).toEqual([]);
    const now = await h.call("POST", `/api/v1/app/${app.body.id}/msg`, {
      eventType: "now",
      payload: {},
    });
    expect(now.status).toBe(202);
    await waitFor(() => seen.length > 0, 5_000, "a notification");
    expect(seen[0]).toBe(true);
  } finally {
    await listener.end();
  }
});

test("a message to an app id that does not exist is refused alone; its batch is written", async () => {
  const app = await h.call("POST", "/api/v1/app", { name: "present" });
  await h.call("POST", `/api/v1/app/${app.body.id}/endpoint`, { url: "https://93.184.215.14/p" });
  const missing = newId(ID_PREFIX.app); // well-formed, but no app has it
  const results = await Promise.all(
    Array.from({ length: 30 }, (_, i) =>
      h.call("POST", `/api/v1/app/${i % 3 === 0 ? missing : app.body.id}/msg`, {
        eventType: "t",
        payload: { i },
      }),
    ),
  );
  expect(results.filter((r) => r.status === 404)).toHaveLength(10);
  expect(results.filter((r) => r.status === 404).every((r) => r.body.code === "not_found")).toBe(
    true,
  );
  expect(results.filter((r) => r.status === 202)).toHaveLength(20);
  const { rows } = await h.db.pool.query(
    `select (select count(*)::int from messages where app_id = $1) as present,
            (select count(*)::int from deliveries where app_id = $1) as deliveries,
            (select count(*)::int from messages where app_id = $2) as missing`,
    [app.body.id, missing],
  );
  expect(rows[0]).toEqual({ present: 20, deliveries: 20, missing: 0 });
});

test("a uid shaped like an app id still names its app; an app key cannot reach another app by id", async () => {
  const idShapedUid = newId(ID_PREFIX.app); // no app has this id
  const app = await h.call("POST", "/api/v1/app", { name: "uid", uid: idShapedUid });
  expect(app.status).toBe(201);
  const sent = await h.call("POST", `/api/v1/app/${idShapedUid}/msg`, {
    eventType: "t",
    payload: { via: "uid" },
  });
  expect(sent.status).toBe(202);
  const stored = await h.db.pool.query("select app_id from messages where id = $1", [sent.body.id]);
  expect(stored.rows[0].app_id).toBe(app.body.id);

  const other = await h.call("POST", "/api/v1/app", { name: "other" });
  const key = await h.call("POST", "/api/v1/api-keys", { role: "app", appId: app.body.id });
  expect(key.status).toBe(201);
  const asApp = { authorization: `Bearer ${key.body.key}` };
  const own = await h.call(
    "POST",
    `/api/v1/app/${app.body.id}/msg`,
    { eventType: "t", payload: {} },
    asApp,
  );
  expect(own.status).toBe(202);
  const foreign = await h.call(
    "POST",
    `/api/v1/app/${other.body.id}/msg`,
    { eventType: "t", payload: {} },
    asApp,
  );
  expect(foreign.status).toBe(404);
  const written = await h.db.pool.query(
    "select count(*)::int as n from messages where app_id = $1",
    [other.body.id],
  );
  expect(written.rows[0].n).toBe(0);
});

test("a long queue gets a second writer beside the first, never a third; every message is written", async () => {
  const app = await h.call("POST", "/api/v1/app", { name: "writers" });
  await h.call("POST", `/api/v1/app/${app.body.id}/endpoint`, { url: "https://93.184.215.14/w2" });
  let running = 0;
  let most = 0;
  // The pool as the batcher sees it, counting batch writes under way at once.
  const counting = {
    async query(config: { name?: string }, values?: unknown[]) {
      const isBatch = config.name === "hookrelay_enqueue_batch";
      if (isBatch) most = Math.max(most, ++running);
      try {
        return await h.db.pool.query(config as never, values as never);
      } finally {
        if (isBatch) running--;
      }
    },
  } as unknown as Pool;
  const batcher = makeEnqueueBatcher(counting, 5, { maxBatch: 5, secondWriterAt: 3 });
  batcher.start();
  const results = await Promise.all(
    Array.from({ length: 300 }, (_, i) =>
      batcher.enqueue({ appId: app.body.id, eventType: "t", payload: `{"i":${i}}` }),
    ),
  );
  expect(most).toBe(2);
  expect(new Set(results.map((r) => r.messageId)).size).toBe(300);
  expect(results.every((r) => r.created && r.deliveries === 1)).toBe(true);
  const { rows } = await h.db.pool.query(
    "select count(*)::int as n from messages where app_id = $1",
    [app.body.id],
  );
  expect(rows[0].n).toBe(300);
});

test("the batcher takes messages only between start() and stop(); stop() waits for those it took", async () => {
  const app = await h.call("POST", "/api/v1/app", { name: "batch lifecycle" });
  const batcher = makeEnqueueBatcher(h.db.pool, 5);
  const message = (i: number) => ({ appId: app.body.id, eventType: "t", payload: `{"i":${i}}` });
  await expect(batcher.enqueue(message(0))).rejects.toMatchObject({ code: "not_running" });
  batcher.start();
  batcher.start();
  const settled: string[] = [];
  const taken = Array.from({ length: 40 }, (_, i) =>
    batcher.enqueue(message(i + 1)).then((r) => {
      settled.push(r.messageId);
      return r;
    }),
  );
  const stopped = batcher.stop();
  // taken before stop(): still written; asked after it: refused
  await expect(batcher.enqueue(message(99))).rejects.toMatchObject({ code: "not_running" });
  await Promise.all([stopped, batcher.stop()]);
  expect(settled).toHaveLength(40);
  expect((await Promise.all(taken)).every((r) => r.created)).toBe(true);
  const { rows } = await h.db.pool.query(
    "select count(*)::int as n from messages where app_id = $1",
    [app.body.id],
  );
  expect(rows[0].n).toBe(40);
  await batcher.stop();
});

test("a runtime stopping while messages arrive answers each one it took, and writes it first", async () => {
  const adminKey = "ingest-stop-admin-key";
  const config = testConfig({ databaseUrl: h.db.url, host: "127.0.0.1", port: 0, adminKey });
  const runtime = await startRuntime(
    config,
    { api: true, worker: false },
    { logger: silentLogger, redactor: makeRedactor() },
  );
  try {
    const app = await h.call("POST", "/api/v1/app", { name: "stop while sending" });
    let answered = 0;
    const send = async (i: number): Promise<{ status: number; id?: string }> => {
      try {
        const res = await fetch(`${runtime.apiUrl}/api/v1/app/${app.body.id}/msg`, {
          method: "POST",
          headers: { authorization: `Bearer ${adminKey}`, "content-type": "application/json" },
          body: JSON.stringify({ eventType: "t", payload: { i } }),
        });
        answered++;
        return { status: res.status, id: ((await res.json()) as { id?: string }).id };
      } catch {
        return { status: 0 }; // the connection closed under the request
      }
    };
    const first = await send(0);
    expect(first.status).toBe(202);
    // stop once the first of many concurrent requests is answered: the others are then on
    // their way in, in a handler, or waiting for their batch
    const sending = Array.from({ length: 100 }, (_, i) => send(i + 1));
    while (answered < 2) await new Promise((r) => setTimeout(r, 1));
    // and without waiting for the keep-alive timeout of connections busy when it began
    // (stop() returning at all shows it: the keep-alive timeout is longer than a test may run)
    const stopping = Date.now();
    await runtime.stop();
    console.log(`runtime.stop() under 100 concurrent sends: ${Date.now() - stopping} ms`);
    const results = [first, ...(await Promise.all(sending))];
    // accepted, refused while closing, or cut off: never a failure of the server's own making
    for (const r of results) expect([0, 202, 503], JSON.stringify(r)).toContain(r.status);
    const accepted = results.filter((r) => r.status === 202).map((r) => r.id);
    const { rows } = await h.db.pool.query("select id from messages where id = any ($1)", [
      accepted,
    ]);
    expect(rows).toHaveLength(accepted.length);
  } finally {
    await runtime.stop();
  }
});
