/**
 * The `hookrelay` CLI's operator commands talking to this file's API over HTTP
 * (HOOKRELAY_URL, HOOKRELAY_KEY), their stdout, stderr and exit codes checked against the
 * seeded state and the REST API's answers. The commands run in this process with their own
 * environment and output (helpers/cli.ts runCliInProcess); `migrate` runs as a child
 * process (`node dist/cli/main.js`), as do the commands of cli-server.test.ts.
 *
 * The commands are independent of each other (each works on its own app or endpoint), so
 * they run as concurrent tests.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, test } from "vitest";
import { createApiKey } from "../src/api/auth.ts";
import { publicIdsOf } from "../src/ids-public-key.ts";
import {
  type CliOptions,
  listenOnLoopback,
  type Run,
  runCli,
  runCliInProcess,
  show,
} from "./helpers/cli.ts";
import { createTestDb, type TestDb } from "./helpers/db.ts";
import { type Harness, startHarness } from "./helpers/harness.ts";

const V1 = "/api/v1";
const DEAD_URL = "http://127.0.0.1:9";
const MIN = 60_000;

// The migrate test may wait for a free process slot behind others' tests on a loaded machine.
const CLI_TEST_TIMEOUT_MS = 150_000;

let h: Harness;
let dir: string;
let server: { url: string; key: string; keyId: string };

/** Runs `hookrelay <args>` against this file's API (and, for migrate, a database). */
function cli(
  args: string[],
  options: CliOptions & { databaseUrl?: string; process?: boolean } = {},
) {
  return (options.process ? runCli : runCliInProcess)(args, {
    ...options,
    env: {
      HOOKRELAY_URL: server.url,
      HOOKRELAY_KEY: server.key,
      // no cli.json of a real `npm start` is ever found
      HOOKRELAY_DATA_DIR: dir,
      DATABASE_URL: options.databaseUrl ?? h.db.url,
      ...options.env,
    },
  });
}

// ------------------------------------------------------------------------- fixture

const X = {
  uid: "cli-x",
  id: "",
  endpoints: [] as string[],
  dead: [] as number[],
  oldestPending: new Date(),
};
const Y = { uid: "cli-y", id: "" };
const Z = { uid: "cli-z", id: "", endpoints: [] as string[] };
const S = { uid: "cli-send", id: "" };
/** W: dead letters requeued one by one, by the id `dlq list` shows and by the bare number */
const W = { uid: "cli-w", id: "", dead: [] as number[] };

async function app(uid: string): Promise<string> {
  const res = await h.call("POST", `${V1}/app`, { name: `CLI ${uid}`, uid });
  if (res.status !== 201) throw new Error(JSON.stringify(res.body));
  return res.body.id;
}
async function endpoint(appId: string, body: Record<string, unknown> = {}): Promise<string> {
  const res = await h.call("POST", `${V1}/app/${appId}/endpoint`, {
    url: `${DEAD_URL}/${Math.random().toString(36).slice(2)}`,
    ...body,
  });
  if (res.status !== 201) throw new Error(JSON.stringify(res.body));
  return res.body.id;
}

/** Rows in deliveries (with their messages) of one endpoint, `status`, dying/created `agoMs` ago. */
async function rows(
  endpointId: string,
  status: string,
  n: number,
  agoMs: number,
  code: number | null = null,
) {
  const { rows } = await h.db.pool.query(
    `with m as (
       insert into messages (id, app_id, event_type, payload, created_at)
       select 'msg_cli_' || md5(random()::text), e.app_id, 'cli.event', '{}', now() - $4::bigint * interval '1 millisecond'
       from endpoints e, generate_series(1, $3::int) where e.id = $1
       returning id, app_id
     )
     insert into deliveries (message_id, endpoint_id, app_id, status, attempt_count, max_attempts, next_attempt_at,
                             last_status_code, last_error_kind, last_error, created_at, updated_at)
     select m.id, $1, m.app_id, $2, case when $2 = 'pending' then 0 else 3 end, 5,
            -- pending rows are due since they were created (waiting); the others retry tomorrow
            case when $2 = 'pending' then now() - $4::bigint * interval '1 millisecond' else now() + interval '1 day' end,
            $5::int, case when $5::int in (401, 403) then 'credentials' when $5::int is not null then 'http' end,
            case when $5::int is not null then 'HTTP ' || $5::int end,
            now() - $4::bigint * interval '1 millisecond', now() - $4::bigint * interval '1 millisecond'
     from m
     returning id`,
    [endpointId, status, n, agoMs, code],
  );
  return rows.map((r) => Number(r.id));
}

beforeAll(async () => {
  h = await startHarness();
  dir = await mkdtemp(path.join(tmpdir(), "hookrelay-cli-"));
  const key = await createApiKey(h.db.pool, { role: "admin" }, "cli test");
  server = { url: await listenOnLoopback(h.api), key: key.key, keyId: key.id };

  // X: an open circuit (critical), a slow endpoint, 6 credential dead letters, a small backlog
  X.id = await app(X.uid);
  for (let i = 0; i < 5; i++) X.endpoints.push(await endpoint(X.id, { uid: `x${i}` }));
  const [x0, x1, , x3] = X.endpoints as [string, string, string, string, string];
  await h.db.pool.query(
    "update endpoint_health set circuit_state = 'open', opened_at = now(), consecutive_failures = 10 where endpoint_id = $1",
    [x0],
  );
  await h.db.pool.query(
    "update endpoint_health set slow = true, p50_ms = 900, p95_ms = 3000, p99_ms = 4000, samples = 25, success_rate = 1, stats_at = now() where endpoint_id = $1",
    [x1],
  );
  await h.db.pool.query(
    "update endpoints set disabled = true, disabled_reason = 'operator' where id = $1",
    [x3],
  );
  X.dead = await rows(x0, "dead_letter", 6, 20 * MIN, 401);
  await rows(x1, "pending", 2, 5 * MIN);
  await rows(x1, "failed", 1, 3 * MIN, 503);
  X.oldestPending = (
    await h.db.pool.query(
      "select min(created_at) as t from deliveries where app_id = $1 and status = 'pending'",
      [X.id],
    )
  ).rows[0].t;
  await h.db.pool.query(
    `insert into latency_samples (endpoint_id, at, latency_ms, ok)
     values ($1, now() - interval '10 minutes', 100, true), ($1, now() - interval '20 minutes', 300, true),
            ($1, now() - interval '30 minutes', 2000, false)`,
    [x1],
  );

  // Y: nothing wrong
  Y.id = await app(Y.uid);
  await endpoint(Y.id);

  // Z: dead letters to requeue on two endpoints, and an old one that stays
  Z.id = await app(Z.uid);
  Z.endpoints.push(await endpoint(Z.id), await endpoint(Z.id));
  await rows(Z.endpoints[0]!, "dead_letter", 3, 30 * MIN, 500);
  await rows(Z.endpoints[1]!, "dead_letter", 2, 30 * MIN, 502);
  await rows(Z.endpoints[0]!, "dead_letter", 1, 5 * 60 * MIN, 500);

  W.id = await app(W.uid);
  W.dead = await rows(await endpoint(W.id), "dead_letter", 2, 10 * MIN, 500);

  S.id = await app(S.uid);
  await endpoint(S.id, { eventTypes: ["order.created"] });
});

afterAll(async () => {
  await h?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

// ------------------------------------------------------------------------ commands

describe.concurrent("hookrelay CLI", { timeout: CLI_TEST_TIMEOUT_MS }, () => {
  test("status: the health summary as a table", async ({ expect }) => {
    const r = await cli(["status", "--app", X.uid]);
    expect(r.code, show(r)).toBe(0);
    const lines = r.stdout.trimEnd().split("\n");
    expect(lines[0]).toMatch(/^metric\s+value$/);
    expect(lines[1]).toMatch(/^-+\s+-+$/);
    expect(r.stdout).toMatch(
      new RegExp(
        `^oldest pending\\s+5 min \\(${X.oldestPending.toISOString().replace(/\./g, "\\.")}\\)$`,
        "m",
      ),
    );
    expect(r.stdout).toMatch(/^pending\s+2$/m);
    expect(r.stdout).toMatch(/^awaiting retry\s+1$/m);
    expect(r.stdout).toMatch(/^in flight\s+0$/m);
    expect(r.stdout).toMatch(/^dead letter\s+6$/m);
    expect(r.stdout).toMatch(/^delivered last hour\s+2$/m);
    expect(r.stdout).toMatch(/^failed last hour\s+1$/m);
    expect(r.stdout).toMatch(/^avg delivery last hour\s+200 ms$/m);
    expect(lines).toHaveLength(10);
  });

  test("status --json: exactly the API's health summary", async ({ expect }) => {
    const r = await cli(["status", "--app", X.uid, "--json"]);
    expect(r.code, show(r)).toBe(0);
    const got = JSON.parse(r.stdout);
    const api = (await h.call("GET", `${V1}/health/summary?app_id=${X.id}`)).body;
    expect(got.oldestPending.ageMs).toBeGreaterThan(5 * MIN - 1_000);
    got.oldestPending.ageMs = api.oldestPending.ageMs;
    expect(got).toEqual(api);
    expect(got).toMatchObject({
      pending: 2,
      awaitingRetry: 1,
      inFlight: 0,
      deadLetter: 6,
      avgDeliveryMsLastHour: 200,
    });
  });

  // one process, two tests: its output, and its exit code
  let alertsX: Promise<Run> | null = null;
  const alertsOfX = () => (alertsX ??= cli(["alerts", "--app", X.uid]));

  test("alerts: lists the open alerts of an app", async ({ expect }) => {
    const r = await alertsOfX();
    expect(r.stdout).toMatch(/^severity\s+kind\s+subject\s+since\s+message$/m);
    expect(r.stdout).toMatch(
      new RegExp(
        `^critical\\s+circuit_open\\s+${X.endpoints[0]}\\s+\\S+\\s+The circuit of .* is open after 10 consecutive failures`,
        "m",
      ),
    );
    expect(r.stdout).toMatch(new RegExp(`^warning\\s+endpoint_slow\\s+${X.endpoints[1]}\\s`, "m"));
  });

  test("alerts: exit code 3 while a critical alert is open", async ({ expect }) => {
    const r = await alertsOfX();
    expect(r.stdout).toMatch(/^critical\s+circuit_open\s/m);
    expect(r.code, show(r)).toBe(3);
  });

  test("alerts: exit 0 and 'no alerts' when none is open", async ({ expect }) => {
    const r = await cli(["alerts", "--app", Y.uid]);
    expect(r.code, show(r)).toBe(0);
    expect(r.stdout).toBe("no alerts\n");
  });

  test("slow: the endpoints over the p95 threshold", async ({ expect }) => {
    const r = await cli(["slow"]);
    expect(r.code, show(r)).toBe(0);
    const lines = r.stdout.trimEnd().split("\n");
    expect(lines[0]).toMatch(
      /^endpoint\s+app\s+url\s+circuit\s+p50\s+p95\s+p99\s+samples\s+success\s+pending\s+dead$/,
    );
    expect(lines).toHaveLength(3);
    expect(lines[2]).toMatch(
      new RegExp(
        `^${X.endpoints[1]}\\s+CLI ${X.uid} \\(${X.uid}\\)\\s+http://127\\.0\\.0\\.1:9/\\S+\\s+closed\\s+900 ms\\s+3\\.0 s\\s+4\\.0 s\\s+25\\s+100\\.0%\\s+3\\s+0$`,
      ),
    );
  });

  test("endpoints: the health table of one app", async ({ expect }) => {
    const r = await cli(["endpoints", "--app", X.uid]);
    expect(r.code, show(r)).toBe(0);
    const lines = r.stdout.trimEnd().split("\n");
    expect(lines).toHaveLength(2 + X.endpoints.length);
    const byId = new Map(lines.slice(2).map((l) => [l.split(/\s+/)[0], l]));
    expect([...byId.keys()].sort()).toEqual([...X.endpoints].sort());
    // circuit open, 6 dead letters, nothing pending
    expect(byId.get(X.endpoints[0])).toMatch(/\sopen\s.*\s0\s+6$/);
    expect(byId.get(X.endpoints[1])).toMatch(
      /\sclosed\s+900 ms\s+3\.0 s\s+4\.0 s\s+25\s+100\.0%\s+3\s+0$/,
    );
  });

  test("dlq list: dead letters newest first, filtered", async ({ expect }) => {
    const r = await cli(["dlq", "list", "--app", X.uid, "--status-code", "401", "--since", "1h"]);
    expect(r.code, show(r)).toBe(0);
    const lines = r.stdout.trimEnd().split("\n");
    expect(lines[0]).toMatch(
      /^delivery\s+message\s+endpoint\s+event\s+attempts\s+status\s+error\s+died$/,
    );
    const ids = lines.slice(2).map((l) => l.split(/\s+/)[0]);
    const shown = await publicIdsOf(h.db.pool);
    expect(ids).toEqual(
      [...X.dead].sort((a, b) => b - a).map((id) => shown.format("delivery", id)),
    );
    for (const l of lines.slice(2))
      expect(l).toMatch(
        new RegExp(`\\s${X.endpoints[0]}\\s+cli\\.event\\s+3\\s+401\\s+HTTP 401\\s+\\S+Z$`),
      );
  });

  test("dlq requeue --delivery: the id dlq list shows, or the bare number an operator's log holds", async ({
    expect,
  }) => {
    const list = await cli(["dlq", "list", "--app", W.uid, "--json"]);
    expect(list.code, show(list)).toBe(0);
    const [newest] = JSON.parse(list.stdout) as { deliveryId: string }[];
    expect(newest!.deliveryId).toMatch(/^dlv_[A-V][0-9A-Za-z]{10}$/);
    const statusOf = async (id: number) =>
      (await h.db.pool.query("select status from deliveries where id = $1", [id])).rows[0].status;

    const byShown = await cli(["dlq", "requeue", "--delivery", newest!.deliveryId]);
    expect(byShown.code, show(byShown)).toBe(0);
    expect(byShown.stdout).toBe("requeued 1\n");
    const requeued = Math.max(...W.dead);
    expect(await statusOf(requeued)).toBe("pending");

    const other = Math.min(...W.dead);
    const byNumber = await cli(["dlq", "requeue", "--delivery", String(other)]);
    expect(byNumber.code, show(byNumber)).toBe(0);
    expect(await statusOf(other)).toBe("pending");

    const garbled = await cli(["dlq", "requeue", "--delivery", "dlv_not-an-id"]);
    expect(garbled.code).toBe(1);
    expect(garbled.stderr).toMatch(/not a delivery id/);
    const unknown = await cli([
      "dlq",
      "requeue",
      "--delivery",
      `${newest!.deliveryId.slice(0, -1)}0`,
    ]);
    expect(unknown.code).toBe(1);
  });

  test("dlq analyze: the pattern and what to do", async ({ expect }) => {
    const r = await cli(["dlq", "analyze", "--app", X.uid]);
    expect(r.code, show(r)).toBe(0);
    const lines = r.stdout.trimEnd().split("\n");
    expect(lines[0]).toMatch(new RegExp(`^${X.endpoints[0]} http://127\\.0\\.0\\.1:9/`));
    expect(lines[1]).toMatch(/^ {2}dead: 6, avg attempts 3, first \S+Z, last \S+Z$/);
    expect(lines[2]).toBe("  most common: HTTP 401 (status 401)");
    expect(lines[3]).toBe("  pattern: credentials");
    expect(lines[4]).toMatch(
      /^ {2}action: The receiver rejects hookrelay's credentials \(401\/403\)/,
    );
    expect(lines).toHaveLength(5);
  });

  test("dlq requeue --since --app: progress per endpoint on stderr, the count on stdout", async ({
    expect,
  }) => {
    const r = await cli(["dlq", "requeue", "--since", "2h", "--app", Z.uid]);
    expect(r.code, show(r)).toBe(0);
    expect(r.stdout).toBe("requeued 5 deliveries of 2 endpoints\n");
    const progress = r.stderr.trimEnd().split("\n");
    const sorted = [...Z.endpoints].sort();
    const counts = new Map([
      [Z.endpoints[0]!, 3],
      [Z.endpoints[1]!, 2],
    ]);
    const first = counts.get(sorted[0]!)!;
    expect(progress).toEqual([
      `[1/2] ${sorted[0]}: requeued ${first} (total ${first})`,
      `[2/2] ${sorted[1]}: requeued ${counts.get(sorted[1]!)} (total 5)`,
    ]);
    const { rows } = await h.db.pool.query(
      `select endpoint_id, status, attempt_count, requeued_by, updated_at < now() - interval '1 hour' as old
       from deliveries where app_id = $1 order by id`,
      [Z.id],
    );
    const requeued = rows.filter((row) => row.status === "pending");
    expect(requeued).toHaveLength(5);
    expect(
      requeued.every((row) => row.attempt_count === 0 && row.requeued_by === `api:${server.keyId}`),
    ).toBe(true);
    expect(
      rows.filter((row) => row.status === "dead_letter").map((row) => [row.endpoint_id, row.old]),
    ).toEqual([[Z.endpoints[0], true]]);
  });

  test("app create", async ({ expect }) => {
    const r = await cli(["app", "create", "Made by the CLI", "--uid", "cli-made"]);
    expect(r.code, show(r)).toBe(0);
    const m = /^created (app_\w+) \(uid cli-made\)\n$/.exec(r.stdout);
    expect(m, show(r)).not.toBeNull();
    const got = await h.call("GET", `${V1}/app/cli-made`);
    expect(got.body).toMatchObject({ id: m![1], uid: "cli-made", name: "Made by the CLI" });
  });

  test("app list", async ({ expect }) => {
    const r = await cli(["app", "list"]);
    expect(r.code, show(r)).toBe(0);
    expect(r.stdout.split("\n")[0]).toMatch(/^id\s+uid\s+name\s+created$/);
    for (const a of [X, Y, Z, S])
      expect(r.stdout).toMatch(new RegExp(`^${a.id}\\s+${a.uid}\\s+CLI ${a.uid}\\s+\\S+Z$`, "m"));
  });

  test("endpoint add: prints the id and the signing secret", async ({ expect }) => {
    const r = await cli([
      "endpoint",
      "add",
      Y.uid,
      "http://127.0.0.1:9/added",
      "--event-types",
      "a.b, c.d",
      "--uid",
      "added",
      "--description",
      "from the CLI",
    ]);
    expect(r.code, show(r)).toBe(0);
    const m = /^created (ep_\w+)\nsigning secret: (whsec_\S+)\n$/.exec(r.stdout);
    expect(m, show(r)).not.toBeNull();
    const ep = await h.call("GET", `${V1}/app/${Y.id}/endpoint/added`);
    expect(ep.body).toMatchObject({
      id: m![1],
      url: "http://127.0.0.1:9/added",
      eventTypes: ["a.b", "c.d"],
      description: "from the CLI",
    });
    const secret = await h.call("GET", `${V1}/app/${Y.id}/endpoint/${m![1]}/secret`);
    expect(secret.body.key).toBe(m![2]);
  });

  test("endpoint list", async ({ expect }) => {
    const r = await cli(["endpoint", "list", X.uid]);
    expect(r.code, show(r)).toBe(0);
    const lines = r.stdout.trimEnd().split("\n");
    expect(lines[0]).toMatch(/^id\s+uid\s+url\s+event types\s+disabled$/);
    expect(lines.slice(2).map((l) => l.split(/\s+/)[0])).toEqual(X.endpoints);
    expect(lines[2]).toMatch(/\sx0\s+http:\/\/127\.0\.0\.1:9\/\S+\s+all\s+no$/);
  });

  test("endpoint disable", async ({ expect }) => {
    const target = X.endpoints[2]!;
    const r = await cli(["endpoint", "disable", X.uid, target]);
    expect(r.code, show(r)).toBe(0);
    expect(r.stdout).toBe(`${target} disabled\n`);
    const { rows } = await h.db.pool.query(
      "select disabled, disabled_reason from endpoints where id = $1",
      [target],
    );
    expect(rows[0]).toEqual({ disabled: true, disabled_reason: "operator" });
  });

  test("endpoint enable (named by uid)", async ({ expect }) => {
    const target = X.endpoints[3]!;
    const r = await cli(["endpoint", "enable", X.uid, "x3", "--json"]);
    expect(r.code, show(r)).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ id: target, disabled: false });
    const { rows } = await h.db.pool.query(
      "select disabled, disabled_reason from endpoints where id = $1",
      [target],
    );
    expect(rows[0]).toEqual({ disabled: false, disabled_reason: null });
  });

  test("endpoint rotate-secret", async ({ expect }) => {
    const target = X.endpoints[4]!;
    const before = (await h.call("GET", `${V1}/app/${X.id}/endpoint/${target}/secret`)).body.key;
    const r = await cli(["endpoint", "rotate-secret", X.uid, target]);
    expect(r.code, show(r)).toBe(0);
    const m = /^new signing secret: (whsec_\S+)\n$/.exec(r.stdout);
    expect(m, show(r)).not.toBeNull();
    expect(m![1]).not.toBe(before);
    expect((await h.call("GET", `${V1}/app/${X.id}/endpoint/${target}/secret`)).body.key).toBe(
      m![1],
    );
  });

  test("endpoint add --signature-scheme v1a, endpoint secret, rotate-secret --scheme v1+v1a", async ({
    expect,
  }) => {
    const r = await cli([
      "endpoint",
      "add",
      Y.uid,
      "http://127.0.0.1:9/ed",
      "--signature-scheme",
      "v1a",
    ]);
    expect(r.code, show(r)).toBe(0);
    const m = /^created (ep_\w+)\npublic key \(Ed25519, v1a\): (whpk_\S+)\n$/.exec(r.stdout);
    expect(m, show(r)).not.toBeNull();
    const shown = await cli(["endpoint", "secret", Y.uid, m![1]!]);
    expect(shown.stdout).toBe(`public key (Ed25519, v1a): ${m![2]}\n`);
    const rotated = await cli(["endpoint", "rotate-secret", Y.uid, m![1]!, "--scheme", "v1+v1a"]);
    expect(rotated.code, show(rotated)).toBe(0);
    const n =
      /^new signing secret: (whsec_\S+)\nnew public key \(Ed25519, v1a\): (whpk_\S+)\n$/.exec(
        rotated.stdout,
      );
    expect(n, show(rotated)).not.toBeNull();
    expect(n![2]).not.toBe(m![2]);
    const secret = await h.call("GET", `${V1}/app/${Y.id}/endpoint/${m![1]}/secret`);
    expect(secret.body).toEqual({ key: n![1], publicKey: n![2], signatureScheme: "v1+v1a" });
    const bad = await cli([
      "endpoint",
      "add",
      Y.uid,
      "http://127.0.0.1:9/ed2",
      "--signature-scheme",
      "v2",
    ]);
    expect(bad.code).toBe(2);
  });

  test("send: the payload from a JSON file", async ({ expect }) => {
    const file = path.join(dir, "payload.json");
    await writeFile(file, '{\n  "order": 42,\n  "items": ["a", "b"],\n  "total": 9.5\n}\n');
    const r = await cli(["send", S.uid, "order.created", file, "--event-id", "cli-file-1"]);
    expect(r.code, show(r)).toBe(0);
    const m = /^accepted (msg_\w+)\n$/.exec(r.stdout);
    expect(m, show(r)).not.toBeNull();
    const { rows } = await h.db.pool.query(
      "select m.event_type, m.event_id, m.payload, count(d.id)::int as deliveries from messages m left join deliveries d on d.message_id = m.id where m.id = $1 group by m.id, m.event_type, m.event_id, m.payload",
      [m![1]],
    );
    expect(rows[0]).toMatchObject({
      event_type: "order.created",
      event_id: "cli-file-1",
      deliveries: 1,
    });
    expect(JSON.parse(rows[0].payload)).toEqual({ order: 42, items: ["a", "b"], total: 9.5 });
  });

  test("send: the payload from stdin (--json output)", async ({ expect }) => {
    const r = await cli(["send", S.uid, "order.created", "--json"], {
      stdin: '{"from":"stdin","n":1}',
    });
    expect(r.code, show(r)).toBe(0);
    const out = JSON.parse(r.stdout);
    expect(out).toMatchObject({ eventType: "order.created", payload: { from: "stdin", n: 1 } });
    const { rows } = await h.db.pool.query("select payload from messages where id = $1", [out.id]);
    expect(JSON.parse(rows[0].payload)).toEqual({ from: "stdin", n: 1 });
  });

  test("send --ordering-key: the message and its deliveries carry the key", async ({ expect }) => {
    const r = await cli(["send", S.uid, "order.created", "--json", "--ordering-key", "order-7"], {
      stdin: '{"n":2}',
    });
    expect(r.code, show(r)).toBe(0);
    const { rows } = await h.db.pool.query(
      "select m.ordering_key, array_agg(d.ordering_key) as keys from messages m join deliveries d on d.message_id = m.id where m.id = $1 group by m.id, m.ordering_key",
      [JSON.parse(r.stdout).id],
    );
    expect(rows[0]).toEqual({ ordering_key: "order-7", keys: ["order-7"] });
  });

  test("migrate: an empty database gets the schema", async ({ expect }) => {
    let empty: TestDb | null = null;
    try {
      empty = await createTestDb({ template: false });
      const r = await cli(["migrate"], { databaseUrl: empty.url, process: true });
      expect(r.code, show(r)).toBe(0);
      expect(r.stdout).toMatch(
        /^applied: 0001_init\S*, 0002_endpoint_health\S*, 0003_operations\S*/,
      );
      const client = new pg.Client({ connectionString: empty.url });
      await client.connect();
      try {
        const { rows } = await client.query(
          "select count(*)::int as n from information_schema.tables where table_name in ('deliveries', 'alerts', 'latency_samples')",
        );
        expect(rows[0].n).toBe(3);
      } finally {
        await client.end();
      }
    } finally {
      await empty?.drop();
    }
  });

  test("bad usage exits 2", async ({ expect }) => {
    const r = await cli(["status", "--bogus"]);
    expect(r.code, show(r)).toBe(2);
    expect(r.stderr).toMatch(/unknown option '--bogus'/);
  });

  test("an unknown app exits 1 with a clear message", async ({ expect }) => {
    const r = await cli(["endpoint", "list", "no-such-app"]);
    expect(r.code, show(r)).toBe(1);
    expect(r.stderr).toBe("hookrelay: application not found (not_found)\n");
    expect(r.stdout).toBe("");
  });
});
