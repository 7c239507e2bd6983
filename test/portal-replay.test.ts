/**
 * The tenant portal's "Replay" action (docs/portal.md, "Replaying an endpoint") through
 * app.inject: the endpoint page's form, "Count first" and its count, "Start replay" and the
 * progress view, cancel, bad input on the form with the API's words, CSRF; a session of one
 * app can never start, see or cancel a replay of another app; a link without
 * CreateAttempts sees replays but cannot start or cancel one.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type Harness, startHarness } from "./helpers/harness.ts";
import { openPortal } from "./helpers/portal-client.ts";
import { seedMessages } from "./helpers/replay-seed.ts";
import { HOUR, MIN, newApp, newEndpoint, V1 } from "./helpers/seeded-deliveries.ts";

let h: Harness;

beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h?.close();
});

/** A datetime-local value (UTC, to the minute) `ms` from now. */
const at = (ms: number) => new Date(Date.now() + ms).toISOString().slice(0, 16);

/** An app with an endpoint holding two failed or dead deliveries, and a portal link. */
async function tenant(body: Record<string, unknown> = {}) {
  const app = await newApp(h);
  const ep = await newEndpoint(h, app, body);
  const createdAt = new Date(Date.now() - 10 * MIN);
  await seedMessages(h.db.pool, app, ep.id, [
    { status: "dead_letter", code: 500, createdAt },
    { status: "failed", code: 503, createdAt },
    { status: "delivered", code: 200, createdAt },
  ]);
  return { app, ep: ep.id, path: `/portal/endpoints/${ep.id}` };
}

async function portalOf(app: string, body: Record<string, unknown> = {}) {
  const res = await h.call("POST", `${V1}/auth/app-portal-access/${app}`, body);
  expect(res.status).toBe(200);
  return openPortal(h.api, res.body.token);
}

const tasksOf = async (endpointId: string) =>
  (
    await h.db.pool.query(
      "select id, status, dry_run, app_id from background_tasks where endpoint_id = $1 order by id",
      [endpointId],
    )
  ).rows;

describe("a customer replays an endpoint", () => {
  test("the page's form, count first, start, progress, cancel", async () => {
    const t = await tenant({ rateLimit: 5 });
    const c = await portalOf(t.app);
    const page = await c.get(t.path);
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('id="h-replay"');
    expect(page.body).toContain(`action="${t.path}/replay"`);
    expect(page.body).toContain("Empty: 5 per second, the endpoint&#39;s rate limit");
    expect(page.body).toContain("No replays of this endpoint yet.");

    const counted = await c.post(`${t.path}/replay`, {
      kind: "recover",
      since: at(-HOUR),
      intent: "count",
    });
    expect(counted.statusCode, counted.body).toBe(200);
    expect(counted.body).toMatch(
      /data-testid="replay-count">[\s\S]*<strong>2<\/strong> deliveries would be sent/,
    );
    expect((await tasksOf(t.ep)).map((r) => [r.status, r.dry_run])).toEqual([["finished", true]]);

    const started = await c.post(`${t.path}/replay`, {
      kind: "recover",
      since: at(-HOUR),
      intent: "start",
    });
    expect(started.statusCode, started.body).toBe(303);
    const view = started.headers.location!;
    expect(view).toMatch(new RegExp(`^${t.path}/replay/qtask_`));
    const progress = await c.get(view);
    expect(progress.statusCode).toBe(200);
    expect(progress.body).toContain('data-status="running"');
    expect(progress.body).toContain(`hx-get="${view}" hx-trigger="every 2s"`);
    expect(progress.body).toContain(`action="${view}/cancel"`);
    expect((await c.get(t.path)).body).toContain(`href="${view}"`);

    const canceled = await c.post(`${view}/cancel`);
    expect(canceled.statusCode, canceled.body).toBe(303);
    expect((await tasksOf(t.ep)).find((r) => !r.dry_run)?.status).toBe("canceled");
    const after = await c.get(canceled.headers.location!);
    expect(after.body).toContain('data-status="canceled"');
    expect(after.body).not.toContain("hx-trigger");
  });

  test("bad input shows the API's words on the form; nothing starts", async () => {
    const t = await tenant();
    const c = await portalOf(t.app);
    const cases: Array<[Record<string, string>, number, RegExp]> = [
      [{ kind: "recover", since: at(2 * HOUR) }, 422, /is in the future/],
      [
        { kind: "replay-missing", since: at(-HOUR), until: at(-3 * HOUR) },
        422,
        /until must be after since/,
      ],
      [
        { kind: "bulk-replay", since: at(-HOUR), eventTypes: "nope.never" },
        422,
        /no such event type: nope\.never/,
      ],
      [{ kind: "recover", since: "" }, 400, /since is not a usable date-time/],
    ];
    for (const [fields, status, message] of cases) {
      const res = await c.post(`${t.path}/replay`, { ...fields, intent: "start" });
      expect(res.statusCode, JSON.stringify(fields)).toBe(status);
      expect(res.body).toContain('data-testid="replay-error"');
      expect(res.body).toMatch(message);
      expect(res.body).toContain('data-testid="replay-form"');
    }
    expect(await tasksOf(t.ep)).toEqual([]);
  });

  test("a post without the CSRF token is refused", async () => {
    const t = await tenant();
    const c = await portalOf(t.app);
    const res = await c.post(`${t.path}/replay`, {
      kind: "recover",
      since: at(-HOUR),
      intent: "start",
      _csrf: "",
    });
    expect(res.statusCode).toBe(403);
    expect(await tasksOf(t.ep)).toEqual([]);
  });
});

describe("scoped to the session's app", () => {
  test("a session of app A can never start, see or cancel a replay of app B", async () => {
    const a = await tenant();
    const b = await tenant();
    const portalA = await portalOf(a.app);
    const portalB = await portalOf(b.app);
    const startedB = await portalB.post(`${b.path}/replay`, {
      kind: "recover",
      since: at(-HOUR),
      intent: "start",
    });
    expect(startedB.statusCode).toBe(303);
    const taskB = startedB.headers.location!.split("/").pop()!;

    // B's endpoint: its page, its form, a count, a start
    expect((await portalA.get(`${b.path}/replay`)).statusCode).toBe(404);
    for (const intent of ["count", "start"]) {
      const res = await portalA.post(`${b.path}/replay`, {
        kind: "recover",
        since: at(-HOUR),
        intent,
      });
      expect(res.statusCode).toBe(404);
    }
    // B's task: under B's endpoint, under A's own endpoint, and its cancel
    for (const path of [`${b.path}/replay/${taskB}`, `${a.path}/replay/${taskB}`]) {
      const res = await portalA.get(path);
      expect(res.statusCode, path).toBe(404);
      expect(res.body).not.toContain(b.ep);
      expect((await portalA.post(`${path}/cancel`)).statusCode, path).toBe(404);
    }
    expect(await tasksOf(b.ep)).toEqual([
      { id: taskB, status: "running", dry_run: false, app_id: b.app },
    ]);
    // A's own page lists nothing of B's
    const own = await portalA.get(a.path);
    expect(own.body).not.toContain(taskB);
    expect(own.body).toContain("No replays of this endpoint yet.");
  });

  test("a link without CreateAttempts sees replays but cannot start or cancel one", async () => {
    const t = await tenant();
    const full = await portalOf(t.app);
    const started = await full.post(`${t.path}/replay`, {
      kind: "recover",
      since: at(-HOUR),
      intent: "start",
    });
    const view = started.headers.location!;
    const viewer = await portalOf(t.app, { capabilities: ["ViewBase"] });
    const page = await viewer.get(t.path);
    expect(page.body).not.toContain('data-testid="replay-form"');
    expect(page.body).toContain("This link does not allow sending messages again.");
    expect(page.body).toContain(`href="${view}"`);
    const progress = await viewer.get(view);
    expect(progress.statusCode).toBe(200);
    expect(progress.body).not.toContain(`action="${view}/cancel"`);
    const refused = await viewer.post(`${t.path}/replay`, {
      kind: "recover",
      since: at(-HOUR),
      intent: "count",
    });
    expect(refused.statusCode).toBe(403);
    expect((await viewer.post(`${view}/cancel`)).statusCode).toBe(403);
    expect((await tasksOf(t.ep)).map((r) => r.status)).toEqual(["running"]);
  });
});
