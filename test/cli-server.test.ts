/**
 * The CLI answers with the server's configuration, never its own shell's (docs/cli.md):
 * a real `hookrelay api` process with its own SSRF allowlist and alert threshold, and the
 * CLI run as a child process with contrary settings in its environment. Also how the CLI
 * finds the local server (cli.json) and the embedded database (db-url), with the commands
 * run in process with their own environment (helpers/cli.ts runCliInProcess).
 */
import { randomBytes } from "node:crypto";
import { mkdir, mkdtemp, rm, stat, writeFile } from "node:fs/promises";
import net from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { LOCAL_CLI_KEY_NAME, provideLocalCliAccess } from "../src/api/local-cli-key.ts";
import { silentLogger } from "../src/logger.ts";
import { readLocalCliAccess, writeLocalCliAccess } from "../src/security/local-cli-access.ts";
import { listenOnLoopback, runCli, runCliInProcess, show } from "./helpers/cli.ts";
import { createTestDb, type TestDb } from "./helpers/db.ts";
import { buildTestApi, testConfig } from "./helpers/harness.ts";
import { type HookrelayProcess, isRunning, killAll, spawnHookrelay } from "./helpers/processes.ts";
import { waitFor } from "./helpers/receiver.ts";

const V1 = "/api/v1";
const MIN = 60_000;

let db: TestDb;
let dir: string;

beforeAll(async () => {
  db = await createTestDb();
  dir = await mkdtemp(path.join(tmpdir(), "hookrelay-cli-server-"));
});
afterAll(async () => {
  await killAll();
  await db?.drop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** A loopback port nothing listens on (just freed). */
function closedPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer().listen(0, "127.0.0.1", () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
    s.on("error", reject);
  });
}

/** A fetch with a key, JSON in and out. */
async function call(base: string, key: string, method: string, url: string, body?: unknown) {
  const res = await fetch(`${base}${url}`, {
    method,
    headers: {
      authorization: `Bearer ${key}`,
      ...(body !== undefined && { "content-type": "application/json" }),
    },
    ...(body !== undefined && { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  // biome-ignore lint/suspicious/noExplicitAny: response JSON, asserted field by field
  return { status: res.status, body: (text ? JSON.parse(text) : null) as any };
}

describe("one configuration: the server's", () => {
  const adminKey = `test-admin-${randomBytes(12).toString("hex")}`;
  let api: HookrelayProcess;
  let url: string;
  let appId: string;

  beforeAll(async () => {
    api = spawnHookrelay(["api"], {
      DATABASE_URL: db.url,
      HOOKRELAY_PORT: "0",
      HOOKRELAY_LOG_LEVEL: "warn",
      HOOKRELAY_ADMIN_KEY: adminKey,
      HOOKRELAY_SSRF_ALLOWLIST: "127.0.0.0/8",
      HOOKRELAY_ALERT_OLDEST_PENDING_MS: String(MIN),
    });
    await waitFor(
      () => {
        if (!isRunning(api)) throw new Error(`api exited:\n${api.stdout}\n${api.stderr}`);
        return /listening on (http:\S+)/.test(api.stdout);
      },
      40_000,
      "the api process to listen",
    );
    url = /listening on (http:\S+)/.exec(api.stdout)![1]!;
    const app = await call(url, adminKey, "POST", `${V1}/app`, { name: "one config" });
    appId = app.body.id;
    const ep = await call(url, adminKey, "POST", `${V1}/app/${appId}/endpoint`, {
      url: "http://127.0.0.1:9/server",
    });
    // a delivery waiting for 5 minutes: over the server's 1 min, under the CLI shell's 1 h
    await db.pool.query(
      `with m as (
         insert into messages (id, app_id, event_type, payload, created_at)
         values ('msg_one_config', $1, 'a.b', '{}', now() - interval '5 minutes') returning id)
       insert into deliveries (message_id, endpoint_id, app_id, status, max_attempts, next_attempt_at, created_at, updated_at)
       select m.id, $2, $1, 'pending', 5, now() - interval '5 minutes', now() - interval '5 minutes', now() - interval '5 minutes'
       from m`,
      [appId, ep.body.id],
    );
  });

  // The CLI's own shell says the opposite of the server on both settings.
  const contrary = () => ({
    HOOKRELAY_URL: url,
    HOOKRELAY_KEY: adminKey,
    HOOKRELAY_DATA_DIR: dir,
    HOOKRELAY_SSRF_ALLOWLIST: "",
    HOOKRELAY_ALERT_OLDEST_PENDING_MS: String(60 * MIN),
  });

  test("endpoint add accepts the loopback URL the server allows", async () => {
    const r = await runCli(["endpoint", "add", appId, "http://127.0.0.1:9/from-cli", "--json"], {
      env: contrary(),
    });
    expect(r.code, show(r)).toBe(0);
    const created = JSON.parse(r.stdout);
    const got = await call(url, adminKey, "GET", `${V1}/app/${appId}/endpoint/${created.id}`);
    expect(got.body.url).toBe("http://127.0.0.1:9/from-cli");
  });

  test("alerts shows exactly what the API shows, by the server's threshold", async () => {
    const r = await runCli(["alerts", "--app", appId, "--json"], { env: contrary() });
    // critical by the server's 1 min threshold: exit 3
    expect(r.code, show(r)).toBe(3);
    const fromCli = JSON.parse(r.stdout);
    const fromApi = (await call(url, adminKey, "GET", `${V1}/alerts?app_id=${appId}`)).body.data;
    expect(fromCli.map((a: { kind: string }) => a.kind)).toContain("oldest_pending");
    expect(fromCli).toEqual(fromApi);
  });

  test("and a server without the allowlist refuses the URL, whatever the CLI's shell allows", async () => {
    const strict = await buildTestApi({
      pool: db.pool,
      config: testConfig({ databaseUrl: db.url, ssrfAllowlist: [], adminKey }),
      logger: silentLogger,
    });
    try {
      const strictUrl = await listenOnLoopback(strict);
      const r = await runCli(["endpoint", "add", appId, "http://127.0.0.1:9/refused"], {
        env: { ...contrary(), HOOKRELAY_URL: strictUrl, HOOKRELAY_SSRF_ALLOWLIST: "127.0.0.0/8" },
      });
      expect(r.code, show(r)).toBe(1);
      expect(r.stderr).toMatch(
        /refusing to deliver to 127\.0\.0\.1: loopback.*HOOKRELAY_SSRF_ALLOWLIST can exempt it\) \(url_not_allowed\)/,
      );
    } finally {
      await strict.close();
    }
  });
});

describe("the local server, found through cli.json", () => {
  test("npm start's key is written 0600, reused while valid, replaced once revoked", async () => {
    const data = path.join(dir, "local");
    await mkdir(data);
    const server = await buildTestApi({
      pool: db.pool,
      config: testConfig({ databaseUrl: db.url }),
      logger: silentLogger,
    });
    try {
      const url = await listenOnLoopback(server);
      const first = await provideLocalCliAccess(db.pool, data, url);
      expect((await stat(path.join(data, "cli.json"))).mode & 0o777).toBe(0o600);
      expect(await readLocalCliAccess(data)).toEqual(first);
      const { rows } = await db.pool.query("select name, role from api_keys where id = $1", [
        first.keyId,
      ]);
      expect(rows[0]).toEqual({ name: LOCAL_CLI_KEY_NAME, role: "admin" });

      // no --url, no --key: the CLI uses the file
      const env = { HOOKRELAY_DATA_DIR: data };
      const ok = await runCliInProcess(["app", "list", "--json"], { env });
      expect(ok.code, show(ok)).toBe(0);
      expect(Array.isArray(JSON.parse(ok.stdout))).toBe(true);

      // a restart keeps the key
      expect(await provideLocalCliAccess(db.pool, data, url)).toEqual(first);

      // revoked: the CLI says what to do; the next start makes a new key
      await db.pool.query("update api_keys set revoked_at = now() where id = $1", [first.keyId]);
      const refused = await runCliInProcess(["status"], { env });
      expect(refused.code, show(refused)).toBe(1);
      expect(refused.stderr).toMatch(/key in cli\.json is no longer valid: restart `npm start`/);
      const second = await provideLocalCliAccess(db.pool, data, url);
      expect(second.keyId).not.toBe(first.keyId);
      expect((await runCliInProcess(["status"], { env })).code).toBe(0);

      // a server that is gone: one sentence, exit 1
      const closed = `http://127.0.0.1:${await closedPort()}`;
      await writeLocalCliAccess(data, { ...second, url: closed });
      const gone = await runCliInProcess(["status"], { env });
      expect(gone.code, show(gone)).toBe(1);
      expect(gone.stderr).toMatch(
        /^hookrelay: the local hookrelay at http:\/\/127\.0\.0\.1:\d+ does not answer \(ECONNREFUSED\): is `npm start` running in this folder\?\n$/,
      );
    } finally {
      await server.close();
    }
  });

  test("no server given and none found: exit 2 and how to get one", async () => {
    const r = await runCliInProcess(["status"], {
      env: { HOOKRELAY_DATA_DIR: path.join(dir, "none") },
    });
    expect(r.code, show(r)).toBe(2);
    expect(r.stderr).toMatch(/no hookrelay server given and none found in .*cli\.json: start one/);
  });

  test("a URL but no key: exit 2", async () => {
    const r = await runCliInProcess(["status"], {
      env: { HOOKRELAY_URL: "http://127.0.0.1:9", HOOKRELAY_DATA_DIR: path.join(dir, "none") },
    });
    expect(r.code, show(r)).toBe(2);
    expect(r.stderr).toBe(
      "hookrelay: no API key for http://127.0.0.1:9: pass --key or set HOOKRELAY_KEY\n",
    );
  });

  test("a malformed --url: exit 2", async () => {
    const r = await runCliInProcess(["status", "--url", "localhost", "--key", "k"]);
    expect(r.code, show(r)).toBe(2);
    expect(r.stderr).toMatch(/--url must be a URL such as http:\/\/127\.0\.0\.1:8787/);
  });
});

describe("db-url", () => {
  async function embeddedDir(name: string, pid: number) {
    const data = path.join(dir, name);
    await mkdir(path.join(data, "pg"), { recursive: true });
    await writeFile(path.join(data, "embedded.json"), JSON.stringify({ password: "p@ss w/rd" }));
    // postmaster.pid: pid, data directory, start time, port, ...
    await writeFile(
      path.join(data, "pg", "postmaster.pid"),
      `${pid}\n${path.join(data, "pg")}\n1700000000\n54329\n\n127.0.0.1\n`,
    );
    return data;
  }

  test("prints the running embedded database's connection string, whole or masked", async () => {
    const data = await embeddedDir("running", process.pid);
    const env = { HOOKRELAY_DATA_DIR: data };
    const whole = await runCliInProcess(["db-url"], { env });
    expect(whole.code, show(whole)).toBe(0);
    expect(whole.stdout).toBe("postgres://postgres:p%40ss%20w%2Frd@127.0.0.1:54329/hookrelay\n");
    const masked = await runCliInProcess(["db-url", "--masked"], { env });
    expect(masked.stdout).toBe("postgres://postgres:****@127.0.0.1:54329/hookrelay\n");
  });

  test("a stopped or absent embedded database is one clear sentence, exit 1", async () => {
    // a pid far above any pid_max: no such process
    const stopped = await runCliInProcess(["db-url"], {
      env: { HOOKRELAY_DATA_DIR: await embeddedDir("stopped", 2 ** 30) },
    });
    expect(stopped.code, show(stopped)).toBe(1);
    expect(stopped.stderr).toMatch(/the embedded database in .* is not running .*`npm start`/);
    const absent = await runCliInProcess(["db-url"], {
      env: { HOOKRELAY_DATA_DIR: path.join(dir, "x") },
    });
    expect(absent.code, show(absent)).toBe(1);
    expect(absent.stderr).toMatch(/no embedded database in .* yet: start hookrelay once/);
  });

  test("with DATABASE_URL, that is the database", async () => {
    const r = await runCliInProcess(["db-url", "--masked"], { env: { DATABASE_URL: db.url } });
    expect(r.code, show(r)).toBe(0);
    expect(r.stdout).toMatch(/^postgres:\/\/[^:]+:\*\*\*\*@127\.0\.0\.1:\d+\//);
  });
});
