/**
 * The CLI commands that manage things (app/endpoint delete, endpoint policy flags,
 * api-key, dry-run requeue, purge) run in process (helpers/cli.ts runCliInProcess) against
 * a listening API, each checked against what the API then answers; and the command tree itself: every command
 * described, and the operator commands loading no server module.
 */
import { readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import type { Command } from "commander";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createApiKey } from "../src/api/auth.ts";
import { buildProgram } from "../src/cli/program.ts";
import { cliAgainst, listenOnLoopback, show } from "./helpers/cli.ts";
import { type Harness, startHarness } from "./helpers/harness.ts";

const V1 = "/api/v1";
const ROOT = path.resolve(import.meta.dirname, "..");

let h: Harness;
let dir: string;
let server: { url: string; key: string };

const cli = cliAgainst(() => ({ ...server, dir }));

async function app(uid: string): Promise<string> {
  const res = await h.call("POST", `${V1}/app`, { name: uid, uid });
  if (res.status !== 201) throw new Error(JSON.stringify(res.body));
  return res.body.id;
}
async function endpoint(appId: string, body: Record<string, unknown> = {}): Promise<string> {
  const res = await h.call("POST", `${V1}/app/${appId}/endpoint`, {
    url: "http://127.0.0.1:9/ep",
    ...body,
  });
  if (res.status !== 201) throw new Error(JSON.stringify(res.body));
  return res.body.id;
}

beforeAll(async () => {
  h = await startHarness();
  dir = await mkdtemp(path.join(tmpdir(), "hookrelay-cli-commands-"));
  const key = await createApiKey(h.db.pool, { role: "admin" }, "cli commands test");
  server = { url: await listenOnLoopback(h.api), key: key.key };
});
afterAll(async () => {
  await h?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe.concurrent("managing with the CLI", { timeout: 120_000 }, () => {
  test("app delete needs --yes, then the app is gone", async () => {
    const id = await app("cli-del-app");
    const refused = await cli(["app", "delete", "cli-del-app"]);
    expect(refused.code, show(refused)).toBe(2);
    expect(refused.stderr).toMatch(/removes its endpoints, messages and history.*add --yes/);
    expect((await h.call("GET", `${V1}/app/${id}`)).status).toBe(200);
    const r = await cli(["app", "delete", "cli-del-app", "--yes"]);
    expect(r.code, show(r)).toBe(0);
    expect(r.stdout).toBe("deleted cli-del-app\n");
    expect((await h.call("GET", `${V1}/app/${id}`)).status).toBe(404);
  });

  test("endpoint delete needs --yes, then the endpoint is gone", async () => {
    const appId = await app("cli-del-ep");
    const ep = await endpoint(appId, { uid: "doomed" });
    expect((await cli(["endpoint", "delete", appId, "doomed"])).code).toBe(2);
    const r = await cli(["endpoint", "delete", appId, "doomed", "--yes"]);
    expect(r.code, show(r)).toBe(0);
    expect((await h.call("GET", `${V1}/app/${appId}/endpoint/${ep}`)).status).toBe(404);
  });

  test("endpoint add sets the delivery policy from its flags", async () => {
    const appId = await app("cli-policy-add");
    const r = await cli([
      "endpoint",
      "add",
      appId,
      "http://127.0.0.1:9/policy",
      "--timeout",
      "5s",
      "--max-attempts",
      "3",
      "--retry-base",
      "250ms",
      "--retry-cap",
      "10m",
      "--max-in-flight",
      "4",
      "--failure-threshold",
      "6",
      "--cooldown",
      "2m",
      "--rate-per-minute",
      "120",
      "--header",
      "X-Team=core",
      "--header",
      "X-Env=a=b",
      "--json",
    ]);
    expect(r.code, show(r)).toBe(0);
    const id = JSON.parse(r.stdout).id;
    const got = (await h.call("GET", `${V1}/app/${appId}/endpoint/${id}`)).body;
    expect(got).toMatchObject({
      timeoutMs: 5_000,
      maxAttempts: 3,
      retryBaseMs: 250,
      retryCapMs: 600_000,
      maxInFlight: 4,
      failureThreshold: 6,
      cooldownMs: 120_000,
      ratePerMinute: 120,
      ratePerSecond: null,
    });
    // headers are stored, never listed (they often carry credentials)
    const { rows } = await h.db.pool.query("select headers from endpoints where id = $1", [id]);
    expect(rows[0].headers).toEqual({ "X-Team": "core", "X-Env": "a=b" });
  });

  test("endpoint update changes what it is told, and 'default' clears a setting", async () => {
    const appId = await app("cli-policy-update");
    const ep = await endpoint(appId, { timeoutMs: 9_000, maxAttempts: 2, uid: "upd" });
    const r = await cli([
      "endpoint",
      "update",
      appId,
      "upd",
      "--timeout",
      "default",
      "--max-attempts",
      "7",
      "--endpoint-url",
      "http://127.0.0.1:9/moved",
      "--event-types",
      "order.paid",
    ]);
    expect(r.code, show(r)).toBe(0);
    expect(r.stdout).toBe(`updated ${ep}\n`);
    const got = (await h.call("GET", `${V1}/app/${appId}/endpoint/${ep}`)).body;
    expect(got).toMatchObject({
      url: "http://127.0.0.1:9/moved",
      timeoutMs: null,
      maxAttempts: 7,
      eventTypes: ["order.paid"],
    });
    const nothing = await cli(["endpoint", "update", appId, "upd"]);
    expect(nothing.code, show(nothing)).toBe(2);
    expect(nothing.stderr).toMatch(/nothing to change/);
  });

  test("bad flag values exit 2 and say what fits", async () => {
    const r = await cli(["endpoint", "add", "any", "http://127.0.0.1:9/x", "--timeout", "soon"]);
    expect(r.code, show(r)).toBe(2);
    expect(r.stderr).toMatch(/expected a duration such as 500ms, 15s, 5m, 2h or 1d/);
    const h2 = await cli(["endpoint", "add", "any", "http://127.0.0.1:9/x", "--header", "novalue"]);
    expect(h2.code).toBe(2);
    expect(h2.stderr).toMatch(/expected name=value/);
  });

  test("api-key create, list, revoke", async () => {
    const appId = await app("cli-keys");
    const created = await cli(["api-key", "create", "--app", "cli-keys", "--name", "tenant"]);
    expect(created.code, show(created)).toBe(0);
    // the app by its name (cli-keys), then its id
    const m = /^created (key_\w+) \(app of cli-keys, (app_\w+)\)\nkey: (hr_app_\S+)\n$/.exec(
      created.stdout,
    );
    expect(m, show(created)).not.toBeNull();
    expect(m![2]).toBe(appId);
    // the new key works, scoped to its app
    const asTenant = await h.call("GET", `${V1}/app`, undefined, {
      authorization: `Bearer ${m![3]}`,
    });
    expect(asTenant.body.data.map((a: { id: string }) => a.id)).toEqual([appId]);

    const listed = await cli(["api-key", "list", "--app", "cli-keys"]);
    expect(listed.code, show(listed)).toBe(0);
    expect(listed.stdout).toMatch(
      new RegExp(`^${m![1]}\\s+app\\s+cli-keys\\s+tenant\\s+\\S+Z\\s+-$`, "m"),
    );
    expect(listed.stdout).not.toContain(m![3]);

    const revoked = await cli(["api-key", "revoke", m![1]!]);
    expect(revoked.code, show(revoked)).toBe(0);
    const after = await h.call("GET", `${V1}/app`, undefined, { authorization: `Bearer ${m![3]}` });
    expect(after.status).toBe(401);
    expect((await cli(["api-key", "create"])).code).toBe(2);
  });

  test("dlq requeue --dry-run says how many and at what pace, and changes nothing", async () => {
    const appId = await app("cli-dry");
    const ep = await endpoint(appId, { ratePerMinute: 120 });
    await h.db.pool.query(
      `with m as (
         insert into messages (id, app_id, event_type, payload)
         select 'msg_dry_' || g, $1, 'a.b', '{}' from generate_series(1, 3) g returning id)
       insert into deliveries (message_id, endpoint_id, app_id, status, attempt_count, max_attempts, next_attempt_at)
       select m.id, $2, $1, 'dead_letter', 5, 5, now() from m`,
      [appId, ep],
    );
    const r = await cli(["dlq", "requeue", "--app", "cli-dry", "--since", "1h", "--dry-run"]);
    expect(r.code, show(r)).toBe(0);
    expect(r.stdout).toMatch(new RegExp(`^${ep}\\s+3\\s+2/s$`, "m"));
    expect(r.stdout).toMatch(/^3 deliveries of 1 endpoints would be requeued$/m);
    const { rows } = await h.db.pool.query(
      "select count(*)::int as n from deliveries where endpoint_id = $1 and status = 'dead_letter'",
      [ep],
    );
    expect(rows[0].n).toBe(3);
  });

  test("purge deletes what is past the server's retention", async () => {
    const appId = await app("cli-purge");
    const ep = await endpoint(appId);
    await h.db.pool.query(
      `insert into attempts (delivery_id, message_id, endpoint_id, app_id, attempt_number, trigger, url,
                             started_at, latency_ms, outcome, status_code, created_at)
       values (0, 'msg_purge_old', $1, $2, 1, 'scheduled', 'http://old', now() - interval '90 days',
               5, 'success', 200, now() - interval '90 days')`,
      [ep, appId],
    );
    const r = await cli(["purge", "--json"]);
    expect(r.code, show(r)).toBe(0);
    expect(JSON.parse(r.stdout).attempts).toBeGreaterThanOrEqual(1);
    const { rows } = await h.db.pool.query(
      "select count(*)::int as n from attempts where endpoint_id = $1",
      [ep],
    );
    expect(rows[0].n).toBe(0);
  });

  test("an app key may not run maintenance jobs", async () => {
    const appId = await app("cli-app-key");
    const { key } = await createApiKey(h.db.pool, { role: "app", appId });
    const r = await cli(["purge"], { env: { HOOKRELAY_KEY: key } });
    expect(r.code, show(r)).toBe(1);
    expect(r.stderr).toBe("hookrelay: only admin keys can run maintenance jobs (forbidden)\n");
  });
});

describe("the command tree", () => {
  test("every command and subcommand has a description", () => {
    const missing: string[] = [];
    const walk = (c: Command, trail: string) => {
      for (const sub of c.commands) {
        const name = `${trail} ${sub.name()}`;
        if (!sub.description()) missing.push(name);
        walk(sub, name);
      }
    };
    walk(buildProgram(), "hookrelay");
    expect(missing).toEqual([]);
  });

  test("the operator commands import no server module (only commander and node: built-ins)", () => {
    // the static import graph of the compiled CLI; dynamic import() is how serve and
    // migrate load the server, only when they run
    const seen = new Set<string>();
    const external = new Set<string>();
    const visit = (file: string) => {
      if (seen.has(file)) return;
      seen.add(file);
      const text = readFileSync(file, "utf8");
      for (const m of text.matchAll(/^(?:import|export)\s[^;]*?\sfrom\s+"([^"]+)";/gms)) {
        const spec = m[1]!;
        if (spec.startsWith(".")) visit(path.resolve(path.dirname(file), spec));
        else external.add(spec);
      }
    };
    visit(path.join(ROOT, "dist/cli/main.js"));
    expect([...external].filter((s) => !s.startsWith("node:")).sort()).toEqual(["commander"]);
    expect(seen.size).toBeGreaterThan(10);
  });
});
