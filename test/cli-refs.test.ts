/**
 * Every CLI command that names an endpoint or an application takes its id or its uid, and
 * an unknown one is exit 1 with the API's not_found, never "nothing to do" (docs/cli.md,
 * "Names"). Each command runs three ways: by id, by uid, by a name nothing has; in process
 * (helpers/cli.ts runCliInProcess) against a listening API.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, type ExpectStatic, test } from "vitest";
import { createApiKey } from "../src/api/auth.ts";
import { cliAgainst, listenOnLoopback, type Run, show } from "./helpers/cli.ts";
import { type Harness, startHarness } from "./helpers/harness.ts";

const V1 = "/api/v1";
const UNKNOWN = "no-such-thing";

let h: Harness;
let dir: string;
let payloadFile: string;
let server: { url: string; key: string };

const cli = cliAgainst(() => ({ ...server, dir }));

interface Named {
  id: string;
  uid: string;
}

let seq = 0;
/** A fresh app with one endpoint (uid `ep`), both named by id and by uid. */
async function fixture(): Promise<{ app: Named; ep: Named }> {
  const n = ++seq;
  const appUid = `refs-app-${n}`;
  const a = await h.call("POST", `${V1}/app`, { name: appUid, uid: appUid });
  if (a.status !== 201) throw new Error(JSON.stringify(a.body));
  // the same endpoint uid in every app: an app given with it narrows it to that app's
  const e = await h.call("POST", `${V1}/app/${a.body.id}/endpoint`, {
    url: "http://127.0.0.1:9/refs",
    uid: `ep-${n}`,
  });
  if (e.status !== 201) throw new Error(JSON.stringify(e.body));
  return { app: { id: a.body.id, uid: appUid }, ep: { id: e.body.id, uid: `ep-${n}` } };
}

/** `n` dead letters of the endpoint, died a minute ago. */
async function deadLetters(appId: string, endpointId: string, n: number): Promise<void> {
  await h.db.pool.query(
    `with m as (
       insert into messages (id, app_id, event_type, payload)
       select 'msg_refs_' || md5(random()::text), $1, 'refs.event', '{}' from generate_series(1, $3::int)
       returning id)
     insert into deliveries (message_id, endpoint_id, app_id, status, attempt_count, max_attempts,
                             next_attempt_at, last_status_code, last_error_kind, last_error,
                             created_at, updated_at)
     select m.id, $2, $1, 'dead_letter', 5, 5, now(), 500, 'http', 'HTTP 500',
            now() - interval '1 minute', now() - interval '1 minute' from m`,
    [appId, endpointId, n],
  );
}

const deadCount = async (endpointId: string) =>
  (
    await h.db.pool.query(
      "select count(*)::int as n from deliveries where endpoint_id = $1 and status = 'dead_letter'",
      [endpointId],
    )
  ).rows[0].n as number;

beforeAll(async () => {
  h = await startHarness();
  dir = await mkdtemp(path.join(tmpdir(), "hookrelay-cli-refs-"));
  payloadFile = path.join(dir, "payload.json");
  await writeFile(payloadFile, '{"ok":true}');
  const key = await createApiKey(h.db.pool, { role: "admin" }, "cli refs test");
  server = { url: await listenOnLoopback(h.api), key: key.key };
});
afterAll(async () => {
  await h?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

type Way = "id" | "uid" | "unknown";
const WAYS: Way[] = ["id", "uid", "unknown"];
const pick = (n: Named, way: Way) => (way === "unknown" ? UNKNOWN : n[way]);

/**
 * An unknown name: exit 1, the API's not_found for that kind, on stderr (nothing on
 * stdout), or with --json as the one JSON object on stdout (nothing on stderr).
 */
function expectNotFound(expect: ExpectStatic, r: Run, kind: string) {
  expect(r.code, show(r)).toBe(1);
  if (r.stdout.startsWith("{")) {
    expect(JSON.parse(r.stdout), show(r)).toEqual({
      error: { code: "not_found", message: `${kind} not found`, status: 404 },
    });
    expect(r.stderr, show(r)).toBe("");
    return;
  }
  expect(r.stderr, show(r)).toBe(`hookrelay: ${kind} not found (not_found)\n`);
  expect(r.stdout, show(r)).toBe("");
}

// ------------------------------------------------------------------- endpoint names

interface EndpointCase {
  /** the command line, with the app and endpoint named as given */
  args: (app: string, ep: string) => string[];
  /** what a successful run did (the fixture's endpoint has 2 dead letters) */
  check: (r: Run, f: { app: Named; ep: Named }) => Promise<void> | void;
  /** what an unknown endpoint must leave as it was */
  unchanged?: (f: { app: Named; ep: Named }) => Promise<void>;
}

describe.concurrent("commands that take an endpoint", { timeout: 150_000 }, () => {
  const cases: Record<string, EndpointCase> = {
    "endpoint secret": {
      args: (a, e) => ["endpoint", "secret", a, e],
      check: (r) => {
        if (!/^signing secret: whsec_/.test(r.stdout)) throw new Error(show(r));
      },
    },
    "endpoint update": {
      args: (a, e) => ["endpoint", "update", a, e, "--description", "renamed"],
      check: async (r, f) => {
        if (r.stdout !== `updated ${f.ep.id}\n`) throw new Error(show(r));
        const got = await h.call("GET", `${V1}/app/${f.app.id}/endpoint/${f.ep.id}`);
        if (got.body.description !== "renamed") throw new Error(JSON.stringify(got.body));
      },
    },
    "endpoint disable": {
      args: (a, e) => ["endpoint", "disable", a, e],
      check: async (r, f) => {
        if (r.stdout !== `${f.ep.id} disabled\n`) throw new Error(show(r));
      },
    },
    "endpoint enable": {
      args: (a, e) => ["endpoint", "enable", a, e],
      check: (r, f) => {
        if (r.stdout !== `${f.ep.id} enabled\n`) throw new Error(show(r));
      },
    },
    "endpoint rotate-secret": {
      args: (a, e) => ["endpoint", "rotate-secret", a, e],
      check: (r) => {
        if (!/^new signing secret: whsec_/.test(r.stdout)) throw new Error(show(r));
      },
    },
    "endpoint delete": {
      args: (a, e) => ["endpoint", "delete", a, e, "--yes"],
      check: async (_r, f) => {
        const got = await h.call("GET", `${V1}/app/${f.app.id}/endpoint/${f.ep.id}`);
        if (got.status !== 404) throw new Error(`still there: ${got.status}`);
      },
    },
    "dlq list --endpoint": {
      args: (_a, e) => ["dlq", "list", "--endpoint", e, "--json"],
      check: (r, f) => {
        const rows = JSON.parse(r.stdout) as { endpointId: string }[];
        if (rows.length !== 2 || rows.some((d) => d.endpointId !== f.ep.id))
          throw new Error(show(r));
      },
    },
    "dlq analyze --endpoint": {
      args: (_a, e) => ["dlq", "analyze", "--endpoint", e, "--json"],
      check: (r, f) => {
        const rows = JSON.parse(r.stdout) as { endpointId: string; deadCount: number }[];
        if (rows.length !== 1 || rows[0]!.endpointId !== f.ep.id || rows[0]!.deadCount !== 2)
          throw new Error(show(r));
      },
    },
    "dlq requeue --endpoint": {
      args: (_a, e) => ["dlq", "requeue", "--endpoint", e],
      check: async (r, f) => {
        if (r.stdout !== "requeued 2 deliveries of 1 endpoints\n") throw new Error(show(r));
        if ((await deadCount(f.ep.id)) !== 0) throw new Error("dead letters left");
      },
      unchanged: async (f) => {
        if ((await deadCount(f.ep.id)) !== 2) throw new Error("dead letters requeued");
      },
    },
    "dlq requeue --endpoint --dry-run": {
      args: (_a, e) => ["dlq", "requeue", "--endpoint", e, "--dry-run"],
      check: (r, f) => {
        if (!new RegExp(`^${f.ep.id}\\s+2\\s`, "m").test(r.stdout)) throw new Error(show(r));
        if (!/^2 deliveries of 1 endpoints would be requeued$/m.test(r.stdout))
          throw new Error(show(r));
      },
    },
    "endpoint recover --dry-run": {
      args: (a, e) => ["endpoint", "recover", a, e, "--since", "1h", "--dry-run"],
      check: (r) => {
        if (!/^\S+ endpoint\.recover finished: dry run: 2 would be sent\n$/.test(r.stdout))
          throw new Error(show(r));
      },
    },
    "endpoint replay-missing --dry-run": {
      args: (a, e) => ["endpoint", "replay-missing", a, e, "--since", "1h", "--dry-run"],
      check: (r) => {
        if (!/^\S+ endpoint\.replay finished: dry run: 0 would be sent\n$/.test(r.stdout))
          throw new Error(show(r));
      },
    },
    "endpoint bulk-replay --dry-run": {
      args: (a, e) => ["endpoint", "bulk-replay", a, e, "--since", "1h", "--dry-run"],
      check: (r) => {
        if (!/^\S+ endpoint\.bulk-replay finished: dry run: 2 would be sent\n$/.test(r.stdout))
          throw new Error(show(r));
      },
    },
    "dlq requeue --endpoint --app": {
      args: (a, e) => ["dlq", "requeue", "--endpoint", e, "--app", a],
      check: async (r, f) => {
        if (r.stdout !== "requeued 2 deliveries of 1 endpoints\n") throw new Error(show(r));
        if ((await deadCount(f.ep.id)) !== 0) throw new Error("dead letters left");
      },
    },
  };

  for (const [name, c] of Object.entries(cases)) {
    for (const way of WAYS) {
      test(`${name}: the endpoint by ${way}`, async ({ expect }) => {
        const f = await fixture();
        await deadLetters(f.app.id, f.ep.id, 2);
        const r = await cli(c.args(f.app.uid, pick(f.ep, way)));
        if (way === "unknown") {
          expectNotFound(expect, r, "endpoint");
          await c.unchanged?.(f);
        } else {
          expect(r.code, show(r)).toBe(0);
          await c.check(r, f);
        }
      });
    }
  }

  test("a uid two apps use: with --app it is that app's, without it a 400 that says so", async ({
    expect,
  }) => {
    const a = await fixture();
    const b = await fixture();
    await h.call("PATCH", `${V1}/app/${b.app.id}/endpoint/${b.ep.id}`, { uid: a.ep.uid });
    await deadLetters(a.app.id, a.ep.id, 1);
    await deadLetters(b.app.id, b.ep.id, 2);
    const narrowed = await cli(["dlq", "requeue", "--endpoint", a.ep.uid, "--app", b.app.uid]);
    expect(narrowed.stdout, show(narrowed)).toBe("requeued 2 deliveries of 1 endpoints\n");
    expect(await deadCount(a.ep.id)).toBe(1);
    const listed = await cli(["dlq", "list", "--endpoint", a.ep.uid, "--app", a.app.id, "--json"]);
    expect(listed.code, show(listed)).toBe(0);
    expect(JSON.parse(listed.stdout).map((d: { endpointId: string }) => d.endpointId)).toEqual([
      a.ep.id,
    ]);
    const vague = await cli(["dlq", "list", "--endpoint", a.ep.uid]);
    expect(vague.code, show(vague)).toBe(1);
    expect(vague.stderr).toMatch(/several apps; use the endpoint id \(bad_request\)/);
  });
});

// ---------------------------------------------------------------- application names

describe.concurrent("commands that take an application", { timeout: 150_000 }, () => {
  const cases: Record<string, (app: string) => string[]> = {
    "endpoint list": (a) => ["endpoint", "list", a],
    "endpoint add": (a) => ["endpoint", "add", a, "http://127.0.0.1:9/added"],
    send: (a) => ["send", a, "refs.event", payloadFile],
    "status --app": (a) => ["status", "--app", a],
    "alerts --app": (a) => ["alerts", "--app", a],
    "endpoints --app": (a) => ["endpoints", "--app", a],
    "dlq list --app": (a) => ["dlq", "list", "--app", a],
    "dlq analyze --app": (a) => ["dlq", "analyze", "--app", a],
    "dlq requeue --app": (a) => ["dlq", "requeue", "--since", "1h", "--app", a],
    "api-key create --app": (a) => ["api-key", "create", "--app", a],
    "api-key list --app": (a) => ["api-key", "list", "--app", a],
    "app delete": (a) => ["app", "delete", a, "--yes"],
  };
  for (const [name, args] of Object.entries(cases)) {
    for (const way of WAYS) {
      test(`${name}: the application by ${way}`, async ({ expect }) => {
        const f = await fixture();
        const r = await cli(args(pick(f.app, way)));
        if (way === "unknown") expectNotFound(expect, r, "application");
        else expect(r.code, show(r)).toBe(0);
      });
    }
  }
});
