/**
 * Refused recovery requests (docs/recovery.md, "Refused requests"): each a 4xx with its
 * stable code, and no task made. And app-scoped keys: a tenant sees, reads and cancels only
 * its own app's tasks.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createApiKey } from "../src/api/auth.ts";
import { type Harness, startHarness } from "./helpers/harness.ts";
import { seedMessages } from "./helpers/replay-seed.ts";
import { DAY, HOUR, MIN, newApp, newEndpoint, V1 } from "./helpers/seeded-deliveries.ts";

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(() => h?.close());

const ago = (ms: number) => new Date(Date.now() - ms).toISOString();
const taskCount = async () =>
  Number((await h.db.pool.query("select count(*) as n from background_tasks")).rows[0].n);

describe("refused recovery requests start nothing", () => {
  test("each bad input is its own 4xx code", async () => {
    const app = await newApp(h);
    const ep = await newEndpoint(h, app);
    await seedMessages(h.db.pool, app, ep.id, [
      { eventType: "known.one", status: "delivered", createdAt: new Date(Date.now() - MIN) },
    ]);
    const base = `${V1}/app/${app}/endpoint/${ep.id}`;
    const before = await taskCount();
    // one instant for both ends of the empty window: two calls of ago() can be a
    // millisecond apart, and a window of 1 ms is a valid one
    const hourAgo = ago(HOUR);
    const cases: Array<[string, string, unknown, number, string]> = [
      [
        "recover",
        base,
        { since: new Date(Date.now() + HOUR).toISOString() },
        422,
        "since_in_future",
      ],
      ["recover", base, { since: ago(HOUR), until: ago(2 * HOUR) }, 422, "until_before_since"],
      ["replay-missing", base, { since: hourAgo, until: hourAgo }, 422, "until_before_since"],
      ["replay-missing", base, { since: ago(40 * DAY) }, 422, "window_beyond_retention"],
      [
        "bulk-replay",
        base,
        { since: ago(HOUR), eventTypes: ["no.such"] },
        422,
        "unknown_event_type",
      ],
      ["bulk-replay", base, { since: ago(HOUR), status: "exploded" }, 422, "unknown_status"],
      ["bulk-replay", base, { since: ago(HOUR), status: [3] }, 422, "unknown_status"],
      ["recover", `${V1}/app/${app}/endpoint/ep_nope`, { since: ago(HOUR) }, 404, "not_found"],
      ["recover", `${V1}/app/app_nope/endpoint/${ep.id}`, { since: ago(HOUR) }, 404, "not_found"],
      ["recover", base, { since: "yesterday" }, 400, "bad_request"],
      ["recover", base, {}, 422, "validation_error"],
      ["recover", base, { since: ago(HOUR), ratePerSecond: 0 }, 422, "validation_error"],
    ];
    for (const [path, prefix, body, status, code] of cases) {
      const res = await h.call("POST", `${prefix}/${path}`, body);
      expect([res.status, res.body.code], `${path} ${JSON.stringify(body)}`).toEqual([
        status,
        code,
      ]);
      expect(typeof res.body.detail).toBe("string");
    }
    expect(await taskCount()).toBe(before);

    // a known event type passes: it is on a message of the window, or in the catalogue
    const ok = await h.call("POST", `${base}/bulk-replay`, {
      since: ago(HOUR),
      eventTypes: ["known.one"],
      status: [0, "dead_letter"],
      dryRun: true,
    });
    expect(ok.status, JSON.stringify(ok.body)).toBe(202);
    expect(await taskCount()).toBe(before + 1);
  });

  test("a second replay of the endpoint over an overlapping window while one runs is 409", async () => {
    const app = await newApp(h);
    const ep = await newEndpoint(h, app);
    const other = await newEndpoint(h, app);
    const base = `${V1}/app/${app}/endpoint/${ep.id}`;
    const first = await h.call("POST", `${base}/recover`, { since: ago(2 * HOUR) });
    expect(first.status).toBe(202);
    const before = await taskCount();
    const again = await h.call("POST", `${base}/bulk-replay`, {
      since: ago(3 * HOUR),
      until: ago(HOUR),
    });
    expect([again.status, again.body.code]).toEqual([409, "replay_in_progress"]);
    expect(again.body.detail).toContain(first.body.id);
    // a window that does not overlap, another endpoint, and a dry run are not refused
    const older = await h.call("POST", `${base}/replay-missing`, {
      since: ago(4 * HOUR),
      until: ago(3 * HOUR),
    });
    expect(older.status).toBe(202);
    const elsewhere = await h.call("POST", `${V1}/app/${app}/endpoint/${other.id}/recover`, {
      since: ago(2 * HOUR),
    });
    expect(elsewhere.status).toBe(202);
    const dry = await h.call("POST", `${base}/recover`, { since: ago(2 * HOUR), dryRun: true });
    expect([dry.status, dry.body.status]).toEqual([202, "finished"]);
    expect(await taskCount()).toBe(before + 3);
    // once canceled, the window is free again
    const canceled = await h.call("POST", `${V1}/background-task/${first.body.id}/cancel`);
    expect(canceled.body.status).toBe("canceled");
    const cancelAgain = await h.call("POST", `${V1}/background-task/${dry.body.id}/cancel`);
    expect([cancelAgain.status, cancelAgain.body.code]).toEqual([409, "conflict"]);
    const now = await h.call("POST", `${base}/recover`, { since: ago(2 * HOUR) });
    expect(now.status).toBe(202);
  });
});

describe("what a replay leaves out", () => {
  test("an expunged message is not counted or sent again: its payload is gone", async () => {
    const app = await newApp(h);
    const ep = await newEndpoint(h, app);
    const [kept, expunged] = await seedMessages(h.db.pool, app, ep.id, [
      { status: "dead_letter", createdAt: new Date(Date.now() - 2 * MIN) },
      { status: "dead_letter", createdAt: new Date(Date.now() - MIN) },
    ]);
    const base = `${V1}/app/${app}/endpoint/${ep.id}`;
    const count = async (path: string, body: object) => {
      const res = await h.call("POST", `${base}/${path}`, {
        since: ago(HOUR),
        dryRun: true,
        ...body,
      });
      expect(res.status, JSON.stringify(res.body)).toBe(202);
      const task = await h.call("GET", `${V1}/background-task/${res.body.id}`);
      expect(task.body.status).toBe("finished");
      return task.body.data.total as number;
    };
    expect(await count("recover", {})).toBe(2);
    expect(await count("bulk-replay", { status: ["dead_letter"] })).toBe(2);
    const gone = await h.call("DELETE", `${V1}/app/${app}/msg/${expunged}/content`);
    expect(gone.status, JSON.stringify(gone.body)).toBe(204);
    expect(await count("recover", {})).toBe(1);
    expect(await count("bulk-replay", { status: ["dead_letter"] })).toBe(1);
    expect(kept).toBeDefined();
  });
});

describe("the task list's own filters", () => {
  test("endpoint_id keeps one endpoint's tasks, dry_run real replays or dry runs", async () => {
    const app = await newApp(h);
    const [a, b] = [await newEndpoint(h, app), await newEndpoint(h, app)];
    const start = async (ep: string, dryRun: boolean) => {
      const res = await h.call("POST", `${V1}/app/${app}/endpoint/${ep}/recover`, {
        since: ago(HOUR),
        dryRun,
      });
      expect(res.status, JSON.stringify(res.body)).toBe(202);
      return res.body.id as string;
    };
    const aDry = await start(a.id, true);
    const aReal = await start(a.id, false);
    const bReal = await start(b.id, false);
    const ids = async (query: string) =>
      ((await h.call("GET", `${V1}/background-task?${query}`)).body.data as { id: string }[]).map(
        (t) => t.id,
      );
    expect(await ids(`endpoint_id=${a.id}`)).toEqual([aReal, aDry]);
    expect(await ids(`endpoint_id=${a.id}&dry_run=false`)).toEqual([aReal]);
    expect(await ids(`endpoint_id=${a.id}&dry_run=true`)).toEqual([aDry]);
    expect(await ids(`endpoint_id=${b.id}`)).toEqual([bReal]);
    expect(await ids("endpoint_id=ep_nothing_here")).toEqual([]);
    const bad = await h.call("GET", `${V1}/background-task?dry_run=perhaps`);
    expect([bad.status, bad.body.code]).toEqual([422, "validation_error"]);
  });
});

describe("app-scoped keys", () => {
  test("see, read and cancel only their app's tasks", async () => {
    const mine = await newApp(h);
    const theirs = await newApp(h);
    const myEp = await newEndpoint(h, mine);
    const theirEp = await newEndpoint(h, theirs);
    const { key } = await createApiKey(h.db.pool, { role: "app", appId: mine });
    const asTenant = (method: string, url: string, body?: unknown) =>
      h.call(method, url, body, { authorization: `Bearer ${key}` });

    const own = await asTenant("POST", `${V1}/app/${mine}/endpoint/${myEp.id}/recover`, {
      since: ago(HOUR),
    });
    expect(own.status, JSON.stringify(own.body)).toBe(202);
    const foreign = await h.call("POST", `${V1}/app/${theirs}/endpoint/${theirEp.id}/recover`, {
      since: ago(HOUR),
    });
    expect(foreign.status).toBe(202);

    const listed = await asTenant("GET", `${V1}/background-task?limit=250`);
    expect(listed.status).toBe(200);
    const ids = listed.body.data.map((t: { id: string }) => t.id);
    expect(ids).toContain(own.body.id);
    expect(ids).not.toContain(foreign.body.id);
    expect(listed.body.data.every((t: { data: { appId: string } }) => t.data.appId === mine)).toBe(
      true,
    );
    // the admin key sees both
    const all = await h.call("GET", `${V1}/background-task?limit=250`);
    expect(all.body.data.map((t: { id: string }) => t.id)).toEqual(
      expect.arrayContaining([own.body.id, foreign.body.id]),
    );

    expect((await asTenant("GET", `${V1}/background-task/${foreign.body.id}`)).status).toBe(404);
    expect((await asTenant("POST", `${V1}/background-task/${foreign.body.id}/cancel`)).status).toBe(
      404,
    );
    const attempt = await asTenant("POST", `${V1}/app/${theirs}/endpoint/${theirEp.id}/recover`, {
      since: ago(HOUR),
    });
    expect(attempt.status).toBe(404);
    // the foreign task still runs
    const still = await h.call("GET", `${V1}/background-task/${foreign.body.id}`);
    expect(still.body.status).toBe("running");
    expect((await asTenant("POST", `${V1}/background-task/${own.body.id}/cancel`)).status).toBe(
      200,
    );
  });
});
