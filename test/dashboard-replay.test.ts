/**
 * The dashboard's "Replay" action (docs/dashboard.md, "Replaying an endpoint") through
 * app.inject: the endpoint page's form and its default pace, "Count first" (a dry run that
 * sends nothing) with its count, "Start replay" making a running task and its progress
 * view, cancel, the endpoint's recent replays, a runner's progress shown, CSRF refusals, and
 * bad input answered on the form with the API's words, never a 500.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createApiKey } from "../src/api/auth.ts";
import { silentLogger } from "../src/logger.ts";
import { makeReplayRunner } from "../src/ops/replay-runner.ts";
import { type DashboardClient, dashboardClient } from "./helpers/dashboard-client.ts";
import { type Harness, startHarness } from "./helpers/harness.ts";
import { waitFor } from "./helpers/receiver.ts";
import { seedMessages } from "./helpers/replay-seed.ts";
import { HOUR, MIN, newApp, newEndpoint } from "./helpers/seeded-deliveries.ts";

let h: Harness;
let admin: DashboardClient;

beforeAll(async () => {
  h = await startHarness();
  admin = dashboardClient(h.api);
  await admin.signIn(h.adminKey);
});
afterAll(async () => {
  await h?.close();
});

/** A datetime-local value (UTC, to the minute) `ms` from now. */
const at = (ms: number) => new Date(Date.now() + ms).toISOString().slice(0, 16);

/** An endpoint with two failed or dead deliveries and one delivered, 10 minutes old. */
async function endpointWithFailures(body: Record<string, unknown> = {}) {
  const app = await newApp(h);
  const ep = await newEndpoint(h, app, body);
  const createdAt = new Date(Date.now() - 10 * MIN);
  await seedMessages(h.db.pool, app, ep.id, [
    { status: "dead_letter", code: 500, createdAt, eventType: "order.paid" },
    { status: "failed", code: 503, createdAt, eventType: "order.paid" },
    { status: "delivered", code: 200, createdAt, eventType: "order.lost" },
  ]);
  return { app, ep: ep.id, path: `/dashboard/endpoints/${ep.id}` };
}

const tasksOf = async (endpointId: string) =>
  (
    await h.db.pool.query(
      "select id, status, dry_run, kind, rate_per_second from background_tasks where endpoint_id = $1 order by id",
      [endpointId],
    )
  ).rows;
const statusesOf = async (endpointId: string) =>
  (
    await h.db.pool.query(
      "select status, count(*)::int as n from deliveries where endpoint_id = $1 group by status order by status",
      [endpointId],
    )
  ).rows;

describe("the form", () => {
  test("the endpoint page has the Replay section: kinds, window, filters, pace, both buttons", async () => {
    const { path } = await endpointWithFailures({ rateLimit: 7 });
    const page = await admin.get(path);
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('id="h-replay"');
    expect(page.body).toContain(`action="${path}/replay"`);
    for (const kind of ["recover", "replay-missing", "bulk-replay"])
      expect(page.body).toContain(`name="kind" value="${kind}"`);
    expect(page.body).toMatch(/name="since"[^>]*value="\d{4}-\d\d-\d\dT\d\d:\d\d"/);
    expect(page.body).toContain('name="eventTypes"');
    expect(page.body).toContain('name="status" value="dead_letter"');
    expect(page.body).toMatch(
      /data-testid="replay-pace">Empty: 7 per second, the endpoint&#39;s rate limit/,
    );
    expect(page.body).toContain('name="intent" value="count"');
    expect(page.body).toContain('name="intent" value="start"');
    expect(page.body).toContain("No replays of this endpoint yet.");
  });

  test("without a rate limit the default pace is the server's replay pace", async () => {
    const { path } = await endpointWithFailures();
    const page = await admin.get(`${path}/replay?kind=bulk-replay`);
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain(
      `Empty: ${h.config.worker.replayRatePerSecond} per second, the server&#39;s replay pace`,
    );
    expect(page.body).toContain('name="kind" value="bulk-replay" checked');
  });
});

describe("count, start, progress, cancel", () => {
  test("Count first shows how many would be sent, sends nothing and starts no task", async () => {
    const { ep, path } = await endpointWithFailures({ rateLimit: 2 });
    const before = await statusesOf(ep);
    const res = await admin.post(`${path}/replay`, {
      kind: "recover",
      since: at(-HOUR),
      intent: "count",
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.body).toMatch(
      /data-testid="replay-count">Recover failed and dead-lettered, .*<strong>2<\/strong> deliveries would be sent, at 2 per second/,
    );
    // the form comes back as it was posted, ready to start
    expect(res.body).toContain('name="kind" value="recover" checked');
    expect(await statusesOf(ep)).toEqual(before);
    expect((await tasksOf(ep)).map((t) => [t.status, t.dry_run])).toEqual([["finished", true]]);
    // a replay by filter counts its filters
    const filtered = await admin.post(`${path}/replay`, {
      kind: "bulk-replay",
      since: at(-HOUR),
      eventTypes: "order.lost",
      status: "delivered",
    });
    expect(filtered.statusCode, filtered.body).toBe(200);
    expect(filtered.body).toMatch(/<strong>1<\/strong> delivery would be sent/);
    // dry runs are not listed as replays
    expect((await admin.get(path)).body).toContain("No replays of this endpoint yet.");
  });

  test("Start replay makes a running task at the pace asked; its view polls and cancels", async () => {
    const { ep, path } = await endpointWithFailures({ rateLimit: 7 });
    const res = await admin.post(`${path}/replay`, {
      kind: "recover",
      since: at(-HOUR),
      rate: "3",
      intent: "start",
    });
    expect(res.statusCode, res.body).toBe(303);
    const view = res.headers.location!;
    expect(view).toMatch(new RegExp(`^${path}/replay/qtask_`));
    const taskId = view.split("/").pop()!;
    expect(await tasksOf(ep)).toEqual([
      {
        id: taskId,
        status: "running",
        dry_run: false,
        kind: "endpoint.recover",
        rate_per_second: 3,
      },
    ]);

    const progress = await admin.get(view);
    expect(progress.statusCode).toBe(200);
    expect(progress.body).toContain('data-status="running"');
    expect(progress.body).toContain(`hx-get="${view}" hx-trigger="every 2s"`);
    expect(progress.body).toMatch(/data-testid="task-rate">3 per second/);
    expect(progress.body).toContain(`action="${view}/cancel"`);
    // the endpoint page lists it
    const listed = await admin.get(path);
    expect(listed.body).toContain(`href="${view}"`);
    expect(listed.body).toMatch(/data-testid="replay-tasks"[\s\S]*running/);

    const canceled = await admin.post(`${view}/cancel`);
    expect(canceled.statusCode, canceled.body).toBe(303);
    expect(canceled.headers.location).toBe(`${view}?done=canceled`);
    expect((await tasksOf(ep))[0]!.status).toBe("canceled");
    const after = await admin.get(`${view}?done=canceled`);
    expect(after.body).toContain("Replay canceled");
    expect(after.body).toContain('data-status="canceled"');
    expect(after.body).not.toContain("hx-trigger");
    expect(after.body).not.toContain(`action="${view}/cancel"`);
    // canceling again changes nothing (the API's cancel of a canceled task is a no-op)
    expect((await admin.post(`${view}/cancel`)).statusCode).toBe(303);
    expect((await tasksOf(ep))[0]!.status).toBe("canceled");
  });

  test("the progress view shows what the runner sent: done of total, finished", async () => {
    const { path } = await endpointWithFailures();
    const res = await admin.post(`${path}/replay`, {
      kind: "recover",
      since: at(-HOUR),
      intent: "start",
    });
    const view = res.headers.location!;
    const runner = makeReplayRunner({
      pool: h.db.pool,
      logger: silentLogger,
      defaultMaxAttempts: h.config.delivery.maxAttempts,
      pollIntervalMs: 50,
    });
    runner.start();
    try {
      await waitFor(async () => (await admin.get(view)).body.includes('data-status="finished"'));
    } finally {
      await runner.stop();
    }
    const done = await admin.get(view);
    expect(done.body).toMatch(/data-testid="task-done">2 of 2/);
    expect(done.body).not.toContain("hx-trigger");
  });

  test("a task of another endpoint is not found under this one", async () => {
    const one = await endpointWithFailures();
    const other = await endpointWithFailures();
    const res = await admin.post(`${other.path}/replay`, {
      kind: "recover",
      since: at(-HOUR),
      intent: "start",
    });
    const taskId = res.headers.location!.split("/").pop()!;
    expect((await admin.get(`${one.path}/replay/${taskId}`)).statusCode).toBe(404);
    expect((await admin.post(`${one.path}/replay/${taskId}/cancel`)).statusCode).toBe(404);
    expect((await tasksOf(other.ep))[0]!.status).toBe("running");
  });
});

describe("refusals", () => {
  test("a post without the CSRF token is refused and starts nothing", async () => {
    const { ep, path } = await endpointWithFailures();
    const res = await admin.post(`${path}/replay`, {
      kind: "recover",
      since: at(-HOUR),
      intent: "start",
      _csrf: "",
    });
    expect(res.statusCode).toBe(403);
    const wrong = await admin.post(`${path}/replay`, {
      kind: "recover",
      since: at(-HOUR),
      intent: "start",
      _csrf: "not-the-token",
    });
    expect(wrong.statusCode).toBe(403);
    expect(await tasksOf(ep)).toEqual([]);
    // nor is a cancel carried out without it
    await admin.get(path);
    const started = await admin.post(`${path}/replay`, {
      kind: "recover",
      since: at(-HOUR),
      intent: "start",
    });
    const view = started.headers.location!;
    expect((await admin.post(`${view}/cancel`, { _csrf: "" })).statusCode).toBe(403);
    expect((await tasksOf(ep))[0]!.status).toBe("running");
  });

  test("bad input comes back on the form with the API's words and status, values kept", async () => {
    const { ep, path } = await endpointWithFailures();
    const cases: Array<[Record<string, string>, number, RegExp]> = [
      [{ kind: "recover", since: at(HOUR) }, 422, /since \(.*\) is in the future/],
      [
        { kind: "recover", since: at(-HOUR), until: at(-2 * HOUR) },
        422,
        /until must be after since/,
      ],
      [
        { kind: "replay-missing", since: at(-40 * 24 * HOUR) },
        422,
        /older than the payload retention/,
      ],
      [
        { kind: "bulk-replay", since: at(-HOUR), eventTypes: "no.such.type" },
        422,
        /no such event type: no\.such\.type/,
      ],
      [
        { kind: "bulk-replay", since: at(-HOUR), status: "lost" },
        422,
        /status &quot;lost&quot; is none a replay selects/,
      ],
      [{ kind: "recover", since: "" }, 400, /since is not a usable date-time/],
      [{ kind: "recover", since: "yesterday-ish" }, 400, /since is not a usable date-time/],
      [{ kind: "recover", since: at(-HOUR), rate: "fast" }, 422, /ratePerSecond must be integer/],
      [{ kind: "recover", since: at(-HOUR), rate: "0" }, 422, /ratePerSecond must be &gt;= 1/],
      [{ kind: "everything", since: at(-HOUR) }, 400, /choose what to replay/],
      [{ since: at(-HOUR) }, 400, /choose what to replay/],
    ];
    for (const [fields, status, message] of cases) {
      for (const intent of ["count", "start"]) {
        const res = await admin.post(`${path}/replay`, { ...fields, intent });
        expect(
          res.statusCode,
          `${JSON.stringify(fields)} ${intent}: ${res.body.slice(0, 300)}`,
        ).toBe(status);
        expect(res.body).toMatch(/data-testid="replay-error"/);
        expect(res.body).toMatch(message);
        expect(res.body).toContain('data-testid="replay-form"');
        if (fields.since) expect(res.body).toContain(`value="${fields.since}"`);
      }
    }
    expect(await tasksOf(ep)).toEqual([]);
  });

  test("a second replay over a running one's window is refused on the form (409)", async () => {
    const { ep, path } = await endpointWithFailures();
    const fields = { kind: "recover", since: at(-HOUR), intent: "start" };
    expect((await admin.post(`${path}/replay`, fields)).statusCode).toBe(303);
    const second = await admin.post(`${path}/replay`, { ...fields, kind: "bulk-replay" });
    expect(second.statusCode).toBe(409);
    expect(second.body).toMatch(
      /a replay of this endpoint over an overlapping window is running \(qtask_/,
    );
    expect((await tasksOf(ep)).filter((t) => !t.dry_run)).toHaveLength(1);
  });

  test("an app key's session cannot replay or see another app's endpoint", async () => {
    const mine = await endpointWithFailures();
    const theirs = await endpointWithFailures();
    const started = await admin.post(`${theirs.path}/replay`, {
      kind: "recover",
      since: at(-HOUR),
      intent: "start",
    });
    const theirTask = started.headers.location!.split("/").pop()!;
    const { key } = await createApiKey(h.db.pool, { role: "app", appId: mine.app });
    const app = dashboardClient(h.api);
    await app.signIn(key);
    expect((await app.get(mine.path)).statusCode).toBe(200);
    expect((await app.get(`${theirs.path}/replay`)).statusCode).toBe(404);
    const res = await app.post(`${theirs.path}/replay`, {
      kind: "recover",
      since: at(-HOUR),
      intent: "start",
    });
    expect(res.statusCode).toBe(404);
    expect((await app.get(`${mine.path}/replay/${theirTask}`)).statusCode).toBe(404);
    expect((await app.post(`${mine.path}/replay/${theirTask}/cancel`)).statusCode).toBe(404);
    expect((await tasksOf(theirs.ep)).map((t) => t.status)).toEqual(["running"]);
  });
});
