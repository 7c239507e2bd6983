/**
 * `hookrelay endpoint recover | replay-missing | bulk-replay` and `hookrelay tasks`, run as an
 * operator runs them against an API with a replay runner (docs/cli.md, docs/recovery.md).
 * Each help text is a promise kept here: --dry-run counts and queues nothing, --wait follows
 * the task to its end (exit 1 when it is canceled), the options reach the task, `tasks`
 * lists, shows and cancels. No worker runs: a replayed delivery stays queued (pending),
 * which is what the tests look at.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, test } from "vitest";
import { createApiKey } from "../src/api/auth.ts";
import { silentLogger } from "../src/logger.ts";
import { makeReplayRunner, type ReplayRunner } from "../src/ops/replay-runner.ts";
import { type CliOptions, listenOnLoopback, runCli, show } from "./helpers/cli.ts";
import { type Harness, startHarness } from "./helpers/harness.ts";

const V1 = "/api/v1";
const MIN = 60_000;

let h: Harness;
let dir: string;
let runner: ReplayRunner;
let server: { url: string; key: string };

const cli = (args: string[], options: CliOptions = {}) =>
  runCli(args, {
    ...options,
    env: {
      HOOKRELAY_URL: server.url,
      HOOKRELAY_KEY: server.key,
      HOOKRELAY_DATA_DIR: dir,
      ...options.env,
    },
  });

let seq = 0;
/** A fresh app and endpoint (uid `ep`); replays of one endpoint must not overlap. */
async function fixture(endpoint: Record<string, unknown> = {}) {
  const uid = `replay-${++seq}`;
  const a = await h.call("POST", `${V1}/app`, { name: uid, uid });
  if (a.status !== 201) throw new Error(JSON.stringify(a.body));
  const e = await h.call("POST", `${V1}/app/${a.body.id}/endpoint`, {
    url: "http://127.0.0.1:9/replay",
    uid: "ep",
    ...endpoint,
  });
  if (e.status !== 201) throw new Error(JSON.stringify(e.body));
  return { app: a.body.id as string, appUid: uid, ep: e.body.id as string };
}

/**
 * `n` messages of the app created `agoMs` ago, each with a delivery row for the endpoint
 * in `status` (none when status is null). Returns the message ids.
 */
async function seed(
  f: { app: string; ep: string },
  n: number,
  status: string | null,
  agoMs: number,
  message: { eventType?: string; channels?: string[]; tags?: string[] } = {},
): Promise<string[]> {
  const { rows } = await h.db.pool.query(
    `insert into messages (id, app_id, event_type, payload, channels, tags, created_at)
     select 'msg_replay_' || md5(random()::text), $1, $3, '{}', $4::text[], $5::text[],
            now() - $2::bigint * interval '1 millisecond'
     from generate_series(1, $6::int)
     returning id`,
    [
      f.app,
      agoMs,
      message.eventType ?? "replay.event",
      message.channels ?? null,
      message.tags ?? null,
      n,
    ],
  );
  const ids = rows.map((r) => r.id as string);
  if (status !== null) {
    await h.db.pool.query(
      `insert into deliveries (message_id, endpoint_id, app_id, status, attempt_count, max_attempts,
                               next_attempt_at, created_at, updated_at)
       select m, $2, $3, $4, 5, 5, now() + interval '1 day', now(), now() from unnest($1::text[]) m`,
      [ids, f.ep, f.app, status],
    );
  }
  return ids;
}

/** The endpoint's delivery rows: status by message id, and how many were replayed. */
async function rowsOf(ep: string): Promise<Record<string, string>> {
  const { rows } = await h.db.pool.query(
    "select message_id, status from deliveries where endpoint_id = $1",
    [ep],
  );
  return Object.fromEntries(rows.map((r) => [r.message_id, r.status]));
}

const taskOf = async (id: string) => (await h.call("GET", `${V1}/background-task/${id}`)).body;

beforeAll(async () => {
  h = await startHarness();
  dir = await mkdtemp(path.join(tmpdir(), "hookrelay-cli-replay-"));
  const key = await createApiKey(h.db.pool, { role: "admin" }, "cli replay test");
  server = { url: await listenOnLoopback(h.api), key: key.key };
  runner = makeReplayRunner({
    pool: h.db.pool,
    logger: silentLogger,
    defaultMaxAttempts: h.config.delivery.maxAttempts,
    pollIntervalMs: 100,
  });
  runner.start();
});
afterAll(async () => {
  await runner?.stop();
  await h?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe.concurrent("endpoint recover, replay-missing, bulk-replay", { timeout: 150_000 }, () => {
  test("recover --dry-run: the count of the window's failed and dead letters; nothing queued", async ({
    expect,
  }) => {
    const f = await fixture();
    await seed(f, 2, "dead_letter", 10 * MIN);
    await seed(f, 1, "failed", 10 * MIN);
    await seed(f, 1, "delivered", 10 * MIN);
    await seed(f, 1, "dead_letter", 3 * 60 * MIN); // before --since
    const before = await rowsOf(f.ep);
    const r = await cli(["endpoint", "recover", f.appUid, "ep", "--since", "1h", "--dry-run"]);
    expect(r.code, show(r)).toBe(0);
    const m = /^(\S+) endpoint\.recover finished: dry run: 3 would be sent\n$/.exec(r.stdout);
    expect(m, show(r)).not.toBeNull();
    expect(await rowsOf(f.ep)).toEqual(before);
    const t = await taskOf(m![1]!);
    expect(t).toMatchObject({ status: "finished", data: { dryRun: true, total: 3, done: 0 } });
  });

  test("recover --wait: progress until the end, and the window's failed and dead letters are queued again", async ({
    expect,
  }) => {
    const f = await fixture();
    const dead = await seed(f, 2, "dead_letter", 10 * MIN);
    const failed = await seed(f, 1, "failed", 10 * MIN);
    const [delivered] = await seed(f, 1, "delivered", 10 * MIN);
    const [old] = await seed(f, 1, "dead_letter", 3 * 60 * MIN);
    const r = await cli(["endpoint", "recover", f.app, f.ep, "--since", "1h", "--wait"]);
    expect(r.code, show(r)).toBe(0);
    expect(r.stdout, show(r)).toMatch(/^\S+ endpoint\.recover finished: 3\/3 sent\n$/);
    const rows = await rowsOf(f.ep);
    for (const id of [...dead, ...failed]) expect(rows[id]).toBe("pending");
    expect(rows[delivered!]).toBe("delivered");
    expect(rows[old!]).toBe("dead_letter");
    // each line on stderr is the running task's progress
    for (const line of r.stderr.split("\n").filter(Boolean))
      expect(line).toMatch(/^\S+ endpoint\.recover running: \d+(\/3)? sent/);
  });

  test("recover without --wait: the task's id at once; --since, --until and --rate reach the task", async ({
    expect,
  }) => {
    const f = await fixture();
    const since = new Date(Date.now() - 50 * MIN).toISOString();
    const until = new Date(Date.now() - 5 * MIN).toISOString();
    const r = await cli([
      "endpoint",
      "recover",
      f.appUid,
      "ep",
      "--since",
      since,
      "--until",
      until,
      "--rate",
      "7",
    ]);
    expect(r.code, show(r)).toBe(0);
    const m =
      /^started (\S+) \(endpoint\.recover\); `hookrelay tasks get (\S+)` shows its progress\n$/.exec(
        r.stdout,
      );
    expect(m, show(r)).not.toBeNull();
    expect(m![2]).toBe(m![1]);
    expect(await taskOf(m![1]!)).toMatchObject({
      task: "endpoint.recover",
      data: { endpointId: f.ep, since, until, ratePerSecond: 7, dryRun: false },
    });
  });

  test("replay-missing --dry-run counts the messages it never got (skipped while disabled among them, not the held ones); --wait then queues them", async ({
    expect,
  }) => {
    const f = await fixture({ eventTypes: ["order.paid"] });
    const never = await seed(f, 2, null, 10 * MIN, { eventType: "order.paid" });
    await seed(f, 1, null, 10 * MIN, { eventType: "order.other" }); // not its event type
    const canceled = await seed(f, 1, "canceled", 10 * MIN, { eventType: "order.paid" });
    await seed(f, 1, "delivered", 10 * MIN, { eventType: "order.paid" });
    // skipped while disabled: canceled, kind endpoint_disabled; held: pending, sent on enable
    const skipped = await seed(f, 1, "canceled", 10 * MIN, { eventType: "order.paid" });
    await h.db.pool.query(
      "update deliveries set last_error_kind = 'endpoint_disabled' where message_id = $1",
      [skipped[0]],
    );
    const [held] = await seed(f, 1, "pending", 10 * MIN, { eventType: "order.paid" });

    const dry = await cli([
      "endpoint",
      "replay-missing",
      f.appUid,
      "ep",
      "--since",
      "1h",
      "--dry-run",
    ]);
    expect(dry.code, show(dry)).toBe(0);
    expect(dry.stdout).toMatch(/^\S+ endpoint\.replay finished: dry run: 4 would be sent\n$/);
    expect(Object.keys(await rowsOf(f.ep))).toHaveLength(4);

    const r = await cli(["endpoint", "replay-missing", f.appUid, "ep", "--since", "1h", "--wait"]);
    expect(r.code, show(r)).toBe(0);
    expect(r.stdout).toMatch(/^\S+ endpoint\.replay finished: 4\/4 sent\n$/);
    const rows = await rowsOf(f.ep);
    for (const id of [...never, ...canceled, ...skipped]) expect(rows[id], id).toBe("pending");
    expect(rows[held!]).toBe("pending");
  });

  test("bulk-replay: --event-type, --channel, --tag and --status choose what it sends", async ({
    expect,
  }) => {
    const f = await fixture();
    await seed(f, 2, "delivered", 10 * MIN, { eventType: "a.x", channels: ["eu"], tags: ["vip"] });
    await seed(f, 1, "delivered", 10 * MIN, { eventType: "a.x", channels: ["us"], tags: ["vip"] });
    await seed(f, 1, "failed", 10 * MIN, { eventType: "a.x", channels: ["eu"], tags: ["vip"] });
    await seed(f, 1, "delivered", 10 * MIN, { eventType: "b.y", channels: ["eu"], tags: ["vip"] });
    await seed(f, 1, "delivered", 10 * MIN, { eventType: "a.x", channels: ["eu"] });
    const dry = (extra: string[]) =>
      cli([
        "endpoint",
        "bulk-replay",
        f.app,
        "ep",
        "--since",
        "1h",
        "--dry-run",
        "--json",
        ...extra,
      ]);

    const all = await dry([]);
    expect(all.code, show(all)).toBe(0);
    expect(JSON.parse(all.stdout).data.total).toBe(6);

    const narrow = await dry([
      "--event-type",
      "a.x",
      "--channel",
      "eu",
      "--tag",
      "vip",
      "--status",
      "delivered",
    ]);
    expect(narrow.code, show(narrow)).toBe(0);
    const t = JSON.parse(narrow.stdout);
    expect(t).toMatchObject({
      task: "endpoint.bulk-replay",
      status: "finished",
      data: {
        dryRun: true,
        total: 2,
        filters: { eventTypes: ["a.x"], channel: "eu", tag: "vip", status: ["delivered"] },
      },
    });

    // lists: comma-separated and repeated
    const both = await dry([
      "--event-type",
      "a.x,b.y",
      "--status",
      "delivered",
      "--status",
      "failed",
    ]);
    expect(JSON.parse(both.stdout).data).toMatchObject({
      total: 6,
      filters: { eventTypes: ["a.x", "b.y"], status: ["delivered", "failed"] },
    });
  });

  test("the server's refusals are exit 1 with its code, and nothing starts", async ({ expect }) => {
    const f = await fixture();
    const cases: [string[], RegExp][] = [
      [["--since", "1h", "--until", "2h"], /\(until_before_since\)\n$/],
      [["--since", new Date(Date.now() + 60 * MIN).toISOString()], /\(since_in_future\)\n$/],
      [["--since", "1h", "--status", "sending"], /\(unknown_status\)\n$/],
      [["--since", "1h", "--event-type", "never.seen"], /\(unknown_event_type\)\n$/],
    ];
    for (const [args, error] of cases) {
      const r = await cli(["endpoint", "bulk-replay", f.app, f.ep, ...args]);
      expect(r.code, show(r)).toBe(1);
      expect(r.stderr, show(r)).toMatch(error);
      expect(r.stdout).toBe("");
    }
    const { rows } = await h.db.pool.query(
      "select count(*)::int as n from background_tasks where endpoint_id = $1",
      [f.ep],
    );
    expect(rows[0].n).toBe(0);
    const usage = await cli(["endpoint", "recover", f.app, f.ep]);
    expect(usage.code, show(usage)).toBe(2);
    expect(usage.stderr).toMatch(/required option '--since <time>' not specified/);
    const rate = await cli(["endpoint", "recover", f.app, f.ep, "--since", "1h", "--rate", "0"]);
    expect(rate.code, show(rate)).toBe(2);
  });

  test("recover --wait exits 1 when the task is canceled while it follows", async ({ expect }) => {
    const f = await fixture();
    // one a second, and no worker sends the first: the task waits for it until canceled
    await seed(f, 5, "dead_letter", 10 * MIN);
    const waiting = cli([
      "endpoint",
      "recover",
      f.app,
      f.ep,
      "--since",
      "1h",
      "--rate",
      "1",
      "--wait",
    ]);
    let id: string | undefined;
    while (!id) {
      const { rows } = await h.db.pool.query(
        "select id from background_tasks where endpoint_id = $1",
        [f.ep],
      );
      id = rows[0]?.id;
      if (!id) await new Promise((r) => setTimeout(r, 100));
    }
    const canceled = await h.call("POST", `${V1}/background-task/${id}/cancel`);
    expect(canceled.status, JSON.stringify(canceled.body)).toBe(200);
    const r = await waiting;
    expect(r.code, show(r)).toBe(1);
    // canceled before or after the runner counted the window
    expect(r.stdout).toMatch(
      new RegExp(`^${id} endpoint\\.recover canceled: \\d+(/5 sent| sent, counting)\\n$`),
    );
  });
});

describe.concurrent("tasks", { timeout: 150_000 }, () => {
  /** A running task that stays running: a pace of 1/s and no worker to send its first row. */
  async function runningTask(): Promise<string> {
    const f = await fixture();
    await seed(f, 3, "dead_letter", 10 * MIN);
    const res = await h.call("POST", `${V1}/app/${f.app}/endpoint/${f.ep}/recover`, {
      since: new Date(Date.now() - 60 * MIN).toISOString(),
      ratePerSecond: 1,
    });
    if (res.status !== 202) throw new Error(JSON.stringify(res.body));
    return res.body.id;
  }
  async function dryRun(kind: "recover" | "bulk-replay"): Promise<string> {
    const f = await fixture();
    const res = await h.call("POST", `${V1}/app/${f.app}/endpoint/${f.ep}/${kind}`, {
      since: new Date(Date.now() - 60 * MIN).toISOString(),
      dryRun: true,
    });
    if (res.status !== 202) throw new Error(JSON.stringify(res.body));
    return res.body.id;
  }

  test("tasks list: newest first, filtered by --status and --task", async ({ expect }) => {
    const recover = await dryRun("recover");
    const bulk = await dryRun("bulk-replay");
    const running = await runningTask();

    const all = await cli(["tasks", "list", "--limit", "250"]);
    expect(all.code, show(all)).toBe(0);
    const lines = all.stdout.trimEnd().split("\n");
    expect(lines[0]).toMatch(/^id\s+task\s+status\s+progress\s+endpoint\s+dry run\s+created$/);
    const ids = lines.slice(2).map((l) => l.split(/\s+/)[0]);
    expect(ids.indexOf(running)).toBeLessThan(ids.indexOf(bulk));
    expect(ids.indexOf(bulk)).toBeLessThan(ids.indexOf(recover));
    expect(lines.find((l) => l.startsWith(bulk))).toMatch(
      /\s+endpoint\.bulk-replay\s+finished\s+0\/0 sent\s+\S+\s+yes\s+\S+Z$/,
    );

    const json = async (args: string[]) => {
      const r = await cli(["tasks", "list", "--json", "--limit", "250", ...args]);
      expect(r.code, show(r)).toBe(0);
      return JSON.parse(r.stdout) as { id: string; status: string; task: string }[];
    };
    const bulks = await json(["--task", "endpoint.bulk-replay"]);
    expect(bulks.map((t) => t.id)).toContain(bulk);
    expect(bulks.every((t) => t.task === "endpoint.bulk-replay")).toBe(true);
    const runningOnes = await json(["--status", "running"]);
    expect(runningOnes.map((t) => t.id)).toContain(running);
    expect(runningOnes.every((t) => t.status === "running")).toBe(true);
  });

  test("tasks get: every field; an unknown task is exit 1", async ({ expect }) => {
    const id = await dryRun("recover");
    const r = await cli(["tasks", "get", id]);
    expect(r.code, show(r)).toBe(0);
    expect(r.stdout).toMatch(new RegExp(`^id\\s+${id}$`, "m"));
    expect(r.stdout).toMatch(/^task\s+endpoint\.recover$/m);
    expect(r.stdout).toMatch(/^status\s+finished$/m);
    expect(r.stdout).toMatch(/^dry run\s+yes: counted, nothing sent$/m);
    expect(r.stdout).toMatch(/^window\s+\S+Z \.\. \S+Z$/m);
    expect(r.stdout).toMatch(/^filters\s+none$/m);
    expect(r.stdout).toMatch(/^rate\s+\d+\/s$/m);
    expect(r.stdout).toMatch(/^progress\s+0\/0 sent$/m);
    const json = await cli(["tasks", "get", id, "--json"]);
    expect(JSON.parse(json.stdout)).toEqual(await taskOf(id));
    const unknown = await cli(["tasks", "get", "tsk_nothing"]);
    expect(unknown.code, show(unknown)).toBe(1);
    expect(unknown.stderr).toBe("hookrelay: background task not found (not_found)\n");
    expect(unknown.stdout).toBe("");
  });

  test("tasks cancel: a running task stops (exit 0); a finished one cannot be (exit 1)", async ({
    expect,
  }) => {
    const id = await runningTask();
    const following = cli(["tasks", "get", id, "--wait"]);
    const r = await cli(["tasks", "cancel", id]);
    expect(r.code, show(r)).toBe(0);
    expect(r.stdout).toMatch(
      new RegExp(`^${id} endpoint\\.recover canceled: \\d+(/3 sent| sent, counting)\\n$`),
    );
    const task = await taskOf(id);
    expect(task.status).toBe("canceled");
    // what it sent before the cancel stays sent (queued): as many rows as it counts done
    const { rows } = await h.db.pool.query(
      "select count(*)::int as n from deliveries where endpoint_id = $1 and status = 'pending'",
      [task.data.endpointId],
    );
    expect(rows[0].n).toBe(task.data.done);
    // tasks get --wait ends with the task, exit 1: it did not finish
    const followed = await following;
    expect(followed.code, show(followed)).toBe(1);
    expect(followed.stdout).toMatch(/^status\s+canceled$/m);

    const over = await cli(["tasks", "cancel", await dryRun("recover")]);
    expect(over.code, show(over)).toBe(1);
    expect(over.stderr).toMatch(
      /the task is finished; only a running task can be canceled \(conflict\)\n$/,
    );
  });
});
