/**
 * The replay runner's mechanics (docs/recovery.md): the pace (rows made due per batch and
 * their spacing), backpressure, the default pace, resume from the cursor by another runner
 * after a stop and after a lapsed lease, cancel between batches, and the dry run.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { silentLogger } from "../src/logger.ts";
import { type BatchResult, takeTask } from "../src/ops/replay-batch.ts";
import { makeReplayRunner, type ReplayRunner } from "../src/ops/replay-runner.ts";
import { type Harness, startHarness } from "./helpers/harness.ts";
import { type Receiver, startReceiver, waitFor } from "./helpers/receiver.ts";
import { rowsOf, seedMessages } from "./helpers/replay-seed.ts";
import { HOUR, MIN, newApp, newEndpoint, unique, V1 } from "./helpers/seeded-deliveries.ts";

let h: Harness;
let rx: Receiver;
const batches: Array<{ task: string } & BatchResult> = [];
const runners: ReplayRunner[] = [];

function startRunner(): ReplayRunner {
  const runner = makeReplayRunner({
    pool: h.db.pool,
    logger: silentLogger,
    defaultMaxAttempts: 3,
    pollIntervalMs: 50,
    onBatch: (task, result) => batches.push({ task, ...result }),
  });
  runner.start();
  runners.push(runner);
  return runner;
}
const batchesOf = (task: string) => batches.filter((b) => b.task === task);

beforeAll(async () => {
  h = await startHarness();
  rx = await startReceiver();
});
afterAll(async () => {
  for (const r of runners) await r.stop();
  await h?.close();
  await rx?.close();
});

/** An endpoint with `n` dead letters from ten minutes ago; their message ids. */
async function deadLetters(n: number, body: Record<string, unknown> = {}) {
  const app = await newApp(h);
  const path = `/${unique("ep")}`;
  const ep = await newEndpoint(h, app, { url: `${rx.url}${path}`, ...body });
  const ids = await seedMessages(
    h.db.pool,
    app,
    ep.id,
    Array.from({ length: n }, (_, i) => ({
      status: "dead_letter" as const,
      code: 500,
      createdAt: new Date(Date.now() - 10 * MIN + i),
    })),
  );
  return { app, ep, path, ids };
}

async function recover(app: string, ep: string, body: Record<string, unknown> = {}) {
  const res = await h.call("POST", `${V1}/app/${app}/endpoint/${ep}/recover`, {
    since: new Date(Date.now() - HOUR).toISOString(),
    ...body,
  });
  expect(res.status, JSON.stringify(res.body)).toBe(202);
  return res.body.id as string;
}
const task = async (id: string) => (await h.call("GET", `${V1}/background-task/${id}`)).body;
const deliverAll = (endpointId: string) =>
  h.db.pool.query(
    "update deliveries set status = 'delivered' where endpoint_id = $1 and status = 'pending'",
    [endpointId],
  );

describe("the replay runner", () => {
  test("paces: a second's worth of rows per batch, spaced 1/rate apart, and no more while they wait", async () => {
    const { app, ep } = await deadLetters(10);
    const id = await recover(app, ep.id, { ratePerSecond: 4 });
    const runner = startRunner();
    await waitFor(() => batchesOf(id).length === 1, 15_000, "the first batch");
    expect(batchesOf(id)[0]).toMatchObject({ sent: 4, picked: 4, status: "running" });
    const requeued = [...(await rowsOf(h.db.pool, ep.id)).values()].filter(
      (r) => r.status === "pending",
    );
    expect(requeued.map((r) => r.due_in_s).sort()).toEqual([0, 0.25, 0.5, 0.75]);
    expect(requeued.every((r) => r.trigger === "replay" && r.attempt_count === 0)).toBe(true);
    // no worker takes them: the runner waits. After its batch's second it looks again,
    // finds them still queued and only renews its lease: that look, and no second batch.
    const leaseUntil = async () =>
      (
        await h.db.pool.query("select lease_until from background_tasks where id = $1", [id])
      ).rows[0].lease_until.getTime() as number;
    const leased = await leaseUntil();
    await waitFor(async () => (await leaseUntil()) > leased, 5_000, "the runner to look again");
    expect(batchesOf(id)).toHaveLength(1);
    expect((await task(id)).data).toMatchObject({ total: 10, done: 4 });
    // once they are sent, it goes on, four at a time, and finishes
    for (const n of [2, 3]) {
      await deliverAll(ep.id);
      await waitFor(() => batchesOf(id).length === n, 15_000, `batch ${n}`);
    }
    await deliverAll(ep.id);
    await waitFor(async () => (await task(id)).status === "finished", 15_000, "the end");
    expect(batchesOf(id).map((b) => b.sent)).toEqual([4, 4, 2]);
    await runner.stop();
  });

  test("the pace defaults to the endpoint's rate limit, else HOOKRELAY_REPLAY_RATE_PER_SECOND", async () => {
    const limited = await deadLetters(1, { rateLimit: 7 });
    const perMinute = await deadLetters(1, { ratePerMinute: 30 });
    const free = await deadLetters(1);
    const rate = async (d: { app: string; ep: { id: string } }) =>
      (await task(await recover(d.app, d.ep.id, { dryRun: true }))).data.ratePerSecond;
    expect(await rate(limited)).toBe(7);
    expect(await rate(perMinute)).toBe(0.5);
    expect(await rate(free)).toBe(h.config.worker.replayRatePerSecond);
  });

  test("a stopped runner gives its task up; another goes on from the cursor, each message sent once", async () => {
    const { app, ep, path, ids } = await deadLetters(6);
    const id = await recover(app, ep.id, { ratePerSecond: 2 });
    const a = startRunner();
    await waitFor(() => batchesOf(id).length === 1, 15_000, "runner A's first batch");
    await a.stop();
    const stopped = await task(id);
    expect(stopped.status).toBe("running");
    expect(stopped.data.done).toBe(2);
    const lease = await h.db.pool.query("select lease_holder from background_tasks where id = $1", [
      id,
    ]);
    expect(lease.rows[0].lease_holder).toBeNull();

    // a live lease elsewhere keeps it from other runners; a lapsed one does not
    await h.db.pool.query(
      "update background_tasks set lease_holder = 'crashed', lease_until = now() + interval '1 hour' where id = $1",
      [id],
    );
    const busy = (
      await h.db.pool.query(
        "select id from background_tasks where status = 'running' and id <> $1",
        [id],
      )
    ).rows.map((r) => r.id);
    expect(await takeTask(h.db.pool, "probe", 1_000, busy)).toBeNull();
    await h.db.pool.query(
      "update background_tasks set lease_until = now() - interval '1 second' where id = $1",
      [id],
    );

    h.startWorker();
    startRunner();
    await waitFor(async () => (await task(id)).status === "finished", 15_000, "runner B's end");
    await waitFor(() => rx.on(path).length === 6, 15_000, "six deliveries");
    expect(
      rx
        .on(path)
        .map((r) => r.headers["webhook-id"])
        .sort(),
    ).toEqual([...ids].sort());
    expect((await task(id)).data).toMatchObject({ total: 6, done: 6 });
  });

  test("cancel stops it between batches; a dry run counts and sends nothing", async () => {
    const { app, ep } = await deadLetters(5, { url: "http://127.0.0.1:9/never" });
    const dry = await task(await recover(app, ep.id, { dryRun: true }));
    expect(dry).toMatchObject({ status: "finished", data: { total: 5, done: 0, dryRun: true } });
    const untouched = [...(await rowsOf(h.db.pool, ep.id)).values()];
    expect(untouched.every((r) => r.status === "dead_letter")).toBe(true);

    const id = await recover(app, ep.id, { ratePerSecond: 1 });
    await waitFor(() => batchesOf(id).length === 1, 15_000, "the first batch");
    const res = await h.call("POST", `${V1}/background-task/${id}/cancel`);
    expect([res.status, res.body.status]).toEqual([200, "canceled"]);
    for (const r of runners) await r.stop();
    const rows = [...(await rowsOf(h.db.pool, ep.id)).values()];
    expect(rows.filter((r) => r.trigger === "replay")).toHaveLength(1);
    expect(rows.filter((r) => r.status === "dead_letter")).toHaveLength(4);
    expect((await task(id)).data.done).toBe(1);
    expect(await takeTask(h.db.pool, "probe", 1_000, [])).toBeNull();
  });
});
