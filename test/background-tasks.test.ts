/**
 * Recover, replay-missing and bulk replay as background tasks (docs/recovery.md), driven by
 * the official svix client on a real port, run by the replay runner, delivered by a worker
 * to a real receiver: the same webhook-id, attempts marked as replays, the filters, the
 * pace, resume after a runner stops, cancel and dry run.
 */
import type { AddressInfo } from "node:net";
import { BackgroundTaskStatus, MessageAttemptTriggerType, Svix } from "svix";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { silentLogger } from "../src/logger.ts";
import type { BatchResult } from "../src/ops/replay-batch.ts";
import { makeReplayRunner, type ReplayRunner } from "../src/ops/replay-runner.ts";
import { type Harness, startHarness } from "./helpers/harness.ts";
import { type Receiver, startReceiver, waitFor } from "./helpers/receiver.ts";
import { rowsOf, seedMessages } from "./helpers/replay-seed.ts";
import { HOUR, MIN, newApp, unique, V1 } from "./helpers/seeded-deliveries.ts";

let h: Harness;
let rx: Receiver;
let svix: Svix;
const batches: Array<{ task: string } & BatchResult> = [];
const runners: ReplayRunner[] = [];

function startRunner(): ReplayRunner {
  const runner = makeReplayRunner({
    pool: h.db.pool,
    logger: silentLogger,
    defaultMaxAttempts: h.config.delivery.maxAttempts,
    pollIntervalMs: 50,
    onBatch: (task, result) => batches.push({ task, ...result }),
  });
  runner.start();
  runners.push(runner);
  return runner;
}

beforeAll(async () => {
  h = await startHarness();
  rx = await startReceiver();
  await h.api.listen({ host: "127.0.0.1", port: 0 });
  const { port } = h.api.server.address() as AddressInfo;
  svix = new Svix(h.adminKey, { serverUrl: `http://127.0.0.1:${port}` });
  h.startWorker();
});
afterAll(async () => {
  for (const r of runners) await r.stop();
  await h?.close();
  await rx?.close();
});

/** An endpoint at its own path on the receiver. */
async function endpointOn(appId: string, body: Record<string, unknown> = {}) {
  const path = `/${unique("ep")}`;
  const ep = await svix.endpoint.create(appId, { url: `${rx.url}${path}`, ...body });
  return { id: ep.id, path };
}

const webhookIds = (path: string) => rx.on(path).map((r) => r.headers["webhook-id"] as string);
const taskDone = (id: string) => async () =>
  (await svix.backgroundTask.get(id)).status !== BackgroundTaskStatus.Running;

describe("background tasks through the svix client", () => {
  test("recover sends failed and dead-lettered deliveries of the window again, same webhook-id, attempts marked replay", async () => {
    const app = await newApp(h);
    const ep = await endpointOn(app);
    const [dead, failed, delivered, old] = await seedMessages(h.db.pool, app, ep.id, [
      { status: "dead_letter", code: 500, createdAt: new Date(Date.now() - 10 * MIN) },
      { status: "failed", code: 503, createdAt: new Date(Date.now() - 5 * MIN) },
      { status: "delivered", code: 200, createdAt: new Date(Date.now() - 5 * MIN) },
      // before the window
      { status: "dead_letter", code: 500, createdAt: new Date(Date.now() - 2 * HOUR) },
    ]);
    const out = await svix.endpoint.recover(app, ep.id, { since: new Date(Date.now() - HOUR) });
    expect(out.id).toMatch(/^qtask_/);
    expect(out.status).toBe(BackgroundTaskStatus.Running);
    expect(out.task).toBe("endpoint.recover");

    startRunner();
    await waitFor(taskDone(out.id), 15_000, "the recover task");
    await waitFor(() => rx.on(ep.path).length === 2, 15_000, "the two recovered deliveries");
    expect(webhookIds(ep.path).sort()).toEqual([dead, failed].sort());

    const task = await svix.backgroundTask.get(out.id);
    expect(task.status).toBe(BackgroundTaskStatus.Finished);
    expect(task.data).toMatchObject({ endpointId: ep.id, total: 2, done: 2, messagesSent: 2 });
    const rows = await rowsOf(h.db.pool, ep.id);
    expect(rows.get(delivered!)).toMatchObject({ status: "delivered", trigger: "scheduled" });
    expect(rows.get(old!)).toMatchObject({ status: "dead_letter" });
    await waitFor(async () => (await rowsOf(h.db.pool, ep.id)).get(dead!)?.status === "delivered");
    const attempts = (await svix.messageAttempt.listByMsg(app, dead!)).data;
    expect(attempts).toHaveLength(1);
    expect(attempts[0]!.triggerType).toBe(MessageAttemptTriggerType.Manual);
    const raw = await h.call("GET", `${V1}/app/${app}/attempt/msg/${dead}`);
    expect(raw.body.data[0].trigger).toBe("replay");

    const listed = await svix.backgroundTask.list({ task: "endpoint.recover" as never });
    expect(listed.data.map((t) => t.id)).toContain(out.id);
  });

  test("replay-missing sends messages from before the endpoint existed that match its filters, and canceled ones", async () => {
    const app = await newApp(h);
    const before = await svix.message.create(app, { eventType: "order.paid", payload: { n: 1 } });
    const other = await svix.message.create(app, { eventType: "order.lost", payload: { n: 2 } });
    const elsewhere = await svix.message.create(app, {
      eventType: "order.paid",
      channels: ["eu"],
      payload: { n: 3 },
    });
    const ep = await endpointOn(app, { eventTypes: ["order.paid"], channels: ["us"] });
    const inUs = await svix.message.create(app, {
      eventType: "order.paid",
      channels: ["us"],
      payload: { n: 4 },
    });
    await waitFor(() => rx.on(ep.path).length === 1, 15_000, "the live delivery");
    const [canceled] = await seedMessages(h.db.pool, app, ep.id, [{ status: "canceled" }]);
    // the endpoint takes order.paid on channel "us" only: of the older messages none
    // matches (as the fan-out would judge them), so only the canceled one is missing
    const out = await svix.endpoint.replayMissing(app, ep.id, {
      since: new Date(Date.now() - HOUR),
    });
    expect(out.task).toBe("endpoint.replay");
    startRunner();
    await waitFor(taskDone(out.id), 15_000, "the replay task");
    await waitFor(() => rx.on(ep.path).length === 2, 15_000, "the replayed delivery");
    expect(webhookIds(ep.path)).toEqual([inUs.id, canceled]);
    for (const id of [before.id, other.id, elsewhere.id])
      expect((await rowsOf(h.db.pool, ep.id)).has(id)).toBe(false);

    // without a channel filter, the message sent before the endpoint existed is missing
    const ep2 = await endpointOn(app, { eventTypes: ["order.paid"] });
    const out2 = await svix.endpoint.replayMissing(app, ep2.id, {
      since: new Date(Date.now() - HOUR),
    });
    await waitFor(taskDone(out2.id), 15_000, "the second replay task");
    await waitFor(() => rx.on(ep2.path).length === 3, 15_000, "three replayed deliveries");
    expect(webhookIds(ep2.path).sort()).toEqual([before.id, elsewhere.id, inUs.id].sort());
    const rows = await rowsOf(h.db.pool, ep2.id);
    expect(rows.get(before.id)).toMatchObject({ trigger: "replay" });
    expect(rows.has(other.id)).toBe(false);
  });

  test("bulk-replay selects by event type, channel, tag and status", async () => {
    const app = await newApp(h);
    const ep = await endpointOn(app);
    const at = new Date(Date.now() - 10 * MIN);
    const ids = await seedMessages(h.db.pool, app, ep.id, [
      { eventType: "a.x", channels: ["eu"], tags: ["vip"], status: "delivered", createdAt: at },
      { eventType: "a.x", channels: ["eu"], tags: ["vip"], status: "dead_letter", createdAt: at },
      { eventType: "a.x", channels: ["us"], tags: ["vip"], status: "delivered", createdAt: at },
      { eventType: "a.x", channels: ["eu"], tags: ["std"], status: "delivered", createdAt: at },
      { eventType: "b.y", channels: ["eu"], tags: ["vip"], status: "delivered", createdAt: at },
      { eventType: "a.x", channels: ["eu"], tags: ["vip"], status: "canceled", createdAt: at },
    ]);
    // a dry run first (runners of earlier tests are running): hookrelay's own list of
    // statuses, the delivered rows of a.x
    const statusOnly = await h.call("POST", `${V1}/app/${app}/endpoint/${ep.id}/bulk-replay`, {
      since: new Date(Date.now() - HOUR).toISOString(),
      eventTypes: ["a.x"],
      status: ["delivered"],
      dryRun: true,
    });
    expect(statusOnly.status, JSON.stringify(statusOnly.body)).toBe(202);
    expect(statusOnly.body.status).toBe("finished");
    const counted = await h.call("GET", `${V1}/background-task/${statusOnly.body.id}`);
    expect(counted.body.data).toMatchObject({ total: 3, done: 0, dryRun: true });

    const out = await svix.endpoint.bulkReplay(app, ep.id, {
      since: new Date(Date.now() - HOUR),
      eventTypes: ["a.x"],
      channel: "eu",
      tag: "vip",
    });
    expect(out.task).toBe("endpoint.bulk-replay");
    startRunner();
    await waitFor(taskDone(out.id), 15_000, "the bulk replay");
    await waitFor(() => rx.on(ep.path).length === 3, 15_000, "three replays");
    expect(webhookIds(ep.path).sort()).toEqual([ids[0], ids[1], ids[5]].sort());
    expect((await svix.backgroundTask.get(out.id)).data).toMatchObject({
      total: 3,
      done: 3,
      filters: { eventTypes: ["a.x"], channel: "eu", tag: "vip" },
    });
  });
});
