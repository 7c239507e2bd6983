/**
 * `hookrelay mcp` tested with the MCP SDK's own client against a real server, worker and
 * receiver: in memory (the SDK's linked transports) for the tools, and once over stdio as
 * an MCP client runs it (`node dist/cli/main.js mcp`). Read tools answer for any key; the
 * actions are listed for an admin key only and act only after their own dry run.
 */
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createApiKey } from "../src/api/auth.ts";
import { loadMcp } from "../src/cli/commands/mcp.ts";
import { connect } from "../src/cli/connection.ts";
import { isAdminKey, makeHookrelayMcp } from "../src/mcp/server.ts";
import type { Worker } from "../src/worker/worker.ts";
import { listenOnLoopback, runCli, show } from "./helpers/cli.ts";
import { type Harness, startHarness } from "./helpers/harness.ts";
import { type Receiver, startReceiver, waitFor } from "./helpers/receiver.ts";

const V1 = "/api/v1";
const ROOT = path.resolve(import.meta.dirname, "..");
const READ_TOOLS = [
  "dead_letter_analysis",
  "endpoint_health",
  "get_attempt",
  "get_message",
  "health_summary",
  "list_attempts",
  "list_dead_letters",
  "list_messages",
];
const ACTION_TOOLS = [
  "disable_endpoint",
  "enable_endpoint",
  "replay_endpoint",
  "requeue_dead_letters",
];

let h: Harness;
let worker: Worker;
let receiver: Receiver;
let url: string;
let adminKey: string;
let appKey: string;
const X = { app: "", ok: "", bad: "", other: "", refunded: [] as string[] };
const clients: Client[] = [];

/** An SDK client talking in memory to a fresh `hookrelay mcp` with this key. */
async function client(key: string): Promise<Client> {
  const server = await connect({ url, key });
  const mcp = makeHookrelayMcp(server, { admin: await isAdminKey(server), version: "test" });
  const [a, b] = InMemoryTransport.createLinkedPair();
  await mcp.connect(a);
  const c = new Client({ name: "hookrelay-test", version: "1.0.0" });
  await c.connect(b);
  clients.push(c);
  return c;
}

// biome-ignore lint/suspicious/noExplicitAny: tool answers are JSON of many shapes
type Json = any;

/** Calls a tool; answers its JSON and whether it is an error. */
async function call(c: Client, name: string, args: Record<string, unknown> = {}) {
  const r = await c.callTool({ name, arguments: args });
  const text = (r.content as { type: string; text: string }[])[0]!.text;
  let body: Json;
  try {
    body = JSON.parse(text);
  } catch {
    body = text;
  }
  return { isError: r.isError === true, body };
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
  adminKey = (await createApiKey(h.db.pool, { role: "admin" }, "mcp test")).key;
  url = await listenOnLoopback(h.api);
  receiver = await startReceiver((r) => ({ status: r.path === "/bad" ? 500 : 200 }));
  X.app = (await h.call("POST", `${V1}/app`, { name: "MCP Acme", uid: "mcp-acme" })).body.id;
  X.other = (await h.call("POST", `${V1}/app`, { name: "MCP Other", uid: "mcp-other" })).body.id;
  appKey = (await createApiKey(h.db.pool, { role: "app", appId: X.app }, "mcp app key")).key;
  const ep = async (body: Record<string, unknown>) =>
    (await h.call("POST", `${V1}/app/${X.app}/endpoint`, body)).body.id as string;
  X.ok = await ep({ url: `${receiver.url}/ok`, uid: "ok" });
  X.bad = await ep({
    url: `${receiver.url}/bad`,
    uid: "bad",
    maxAttempts: 1,
    eventTypes: ["order.refunded"],
  });
  for (const n of [1, 2]) {
    const res = await h.call("POST", `${V1}/app/${X.app}/msg`, {
      eventType: "order.refunded",
      payload: { n },
      eventId: `refund-${n}`,
    });
    X.refunded.push(res.body.id);
  }
  worker = h.startWorker();
  await waitFor(async () => (await deadCount(X.bad)) === 2, 30_000, "two dead letters");
});
afterAll(async () => {
  for (const c of clients) await c.close();
  await worker?.stop();
  await receiver?.close();
  await h?.close();
});

describe("the MCP server's tools", { timeout: 60_000 }, () => {
  test("an admin key lists the read tools and the actions; an app key the read tools only", async () => {
    const admin = await client(adminKey);
    const names = (await admin.listTools()).tools.map((t) => t.name).sort();
    expect(names).toEqual([...READ_TOOLS, ...ACTION_TOOLS].sort());
    const tenant = await client(appKey);
    const tenantTools = (await tenant.listTools()).tools;
    expect(tenantTools.map((t) => t.name).sort()).toEqual(READ_TOOLS);
    expect(tenantTools.every((t) => t.annotations?.readOnlyHint === true)).toBe(true);
    const refused = await call(tenant, "requeue_dead_letters", { endpoint: "bad" });
    expect(refused.isError).toBe(true);
    expect(refused.body).toMatch(/Tool requeue_dead_letters not found/);
    expect(await deadCount(X.bad)).toBe(2);
  });

  test("health summary, endpoint health and percentiles, dead-letter analysis", async () => {
    const c = await client(adminKey);
    const health = await call(c, "health_summary", { app: "mcp-acme" });
    expect(health.isError, JSON.stringify(health.body)).toBe(false);
    expect(health.body.summary.deadLetter).toBe(2);
    expect(Array.isArray(health.body.alerts)).toBe(true);

    const all = await call(c, "endpoint_health", { app: "mcp-acme" });
    expect(all.body.data.map((e: Json) => e.endpointId).sort()).toEqual([X.ok, X.bad].sort());
    const one = await call(c, "endpoint_health", { app: "mcp-acme", endpoint: "bad" });
    expect(one.body).toMatchObject({ endpointId: X.bad, queue: { deadLetter: 2 } });
    expect(Object.keys(one.body.latency)).toEqual(
      expect.arrayContaining(["p50Ms", "p95Ms", "p99Ms"]),
    );
    const noApp = await call(c, "endpoint_health", { endpoint: "bad" });
    expect(noApp).toMatchObject({ isError: true, body: { error: { code: "bad_request" } } });

    const analysis = await call(c, "dead_letter_analysis", { app: "mcp-acme", since: "1h" });
    expect(analysis.body.data).toHaveLength(1);
    expect(analysis.body.data[0]).toMatchObject({ endpointId: X.bad, deadCount: 2 });
    expect(analysis.body.data[0].suggestedAction).toEqual(expect.any(String));
    const listed = await call(c, "list_dead_letters", { app: "mcp-acme", limit: 1 });
    expect(listed.body.data).toHaveLength(1);
    expect(listed.body.done).toBe(false);
    const bad = await call(c, "list_dead_letters", { since: "yesterday-ish" });
    expect(bad).toMatchObject({ isError: true, body: { error: { code: "invalid_config" } } });
  });

  test("message and attempt lookup and lists", async () => {
    const c = await client(adminKey);
    const msg = await call(c, "get_message", { app: "mcp-acme", message: "refund-1" });
    expect(msg.body.message).toMatchObject({ id: X.refunded[0], payload: { n: 1 } });
    expect(msg.body.deliveries.map((d: Json) => d.deliveryStatus).sort()).toEqual([
      "dead_letter",
      "delivered",
    ]);
    expect(msg.body.attempts).toMatchObject({ total: 2, succeeded: 1, failed: 1 });

    const dead = await call(c, "list_messages", { app: "mcp-acme", status: ["dead_letter"] });
    expect(dead.body.data.map((m: Json) => m.id).sort()).toEqual([...X.refunded].sort());

    const attempts = await call(c, "list_attempts", {
      app: "mcp-acme",
      endpoint: "bad",
      result: "fail",
    });
    expect(attempts.body.data).toHaveLength(2);
    const first = attempts.body.data[0];
    const one = await call(c, "get_attempt", {
      app: "mcp-acme",
      message: first.msgId,
      attempt: first.id,
    });
    expect(one.body).toMatchObject({ id: first.id, responseStatusCode: 500, endpointId: X.bad });
    const neither = await call(c, "list_attempts", { app: "mcp-acme" });
    expect(neither).toMatchObject({ isError: true, body: { error: { code: "bad_request" } } });
    const missing = await call(c, "get_message", { app: "mcp-acme", message: "msg_nope" });
    expect(missing).toMatchObject({
      isError: true,
      body: { error: { code: "not_found", message: "message not found", status: 404 } },
    });
  });

  test("an app key reads its own app, and nothing of another", async () => {
    const c = await client(appKey);
    const mine = await call(c, "get_message", { app: "mcp-acme", message: "refund-2" });
    expect(mine.body.message.id).toBe(X.refunded[1]);
    const theirs = await call(c, "list_messages", { app: "mcp-other" });
    expect(theirs.isError).toBe(true);
    expect(theirs.body.error.status).toBeGreaterThanOrEqual(400);
  });

  test("requeue: a dry run changes nothing; confirm needs its token, the same arguments, once", async () => {
    const c = await client(adminKey);
    const args = { app: "mcp-acme", endpoint: "bad" };
    const plan = await call(c, "requeue_dead_letters", args);
    expect(plan.body).toMatchObject({ dryRun: true, plan: { total: 2 } });
    expect(plan.body.planToken).toMatch(/^plan_/);
    expect(await deadCount(X.bad)).toBe(2);

    const noToken = await call(c, "requeue_dead_letters", { ...args, confirm: true });
    expect(noToken).toMatchObject({ isError: true, body: { error: { code: "dry_run_required" } } });
    const otherArgs = await call(c, "requeue_dead_letters", {
      ...args,
      includeFailed: true,
      confirm: true,
      planToken: plan.body.planToken,
    });
    expect(otherArgs.body.error).toMatchObject({ code: "dry_run_required" });
    expect(otherArgs.body.error.message).toMatch(/arguments differ/);
    expect(await deadCount(X.bad)).toBe(2);

    const done = await call(c, "requeue_dead_letters", {
      ...args,
      confirm: true,
      planToken: plan.body.planToken,
    });
    expect(done.body).toMatchObject({ done: true, result: { requeued: 2, endpoints: 1 } });
    const again = await call(c, "requeue_dead_letters", {
      ...args,
      confirm: true,
      planToken: plan.body.planToken,
    });
    expect(again.body.error).toMatchObject({ code: "dry_run_required" });
    expect(again.body.error.message).toMatch(/unknown, used or expired/);
    // the receiver still answers 500: they die again, one attempt each
    await waitFor(async () => (await deadCount(X.bad)) === 2, 30_000, "dead again");
  });

  test("disable and enable an endpoint after a dry run", async () => {
    const c = await client(adminKey);
    const args = { app: "mcp-acme", endpoint: "ok" };
    const plan = await call(c, "disable_endpoint", args);
    expect(plan.body.plan).toMatchObject({
      endpoint: X.ok,
      disabledNow: false,
      disabledAfter: true,
    });
    expect(plan.body.plan.effect).toMatch(/^once disabled, /);
    expect((await h.call("GET", `${V1}/app/${X.app}/endpoint/${X.ok}`)).body.disabled).toBe(false);
    const done = await call(c, "disable_endpoint", {
      ...args,
      confirm: true,
      planToken: plan.body.planToken,
    });
    expect(done.body.done).toBe(true);
    expect((await h.call("GET", `${V1}/app/${X.app}/endpoint/${X.ok}`)).body.disabled).toBe(true);
    // a token of one tool is no token for another
    const wrongTool = await call(c, "enable_endpoint", {
      ...args,
      confirm: true,
      planToken: plan.body.planToken,
    });
    expect(wrongTool.body.error.code).toBe("dry_run_required");
    const nothing = await call(c, "disable_endpoint", args);
    expect(nothing.body).toMatchObject({ nothingToDo: true });
    expect(nothing.body.planToken).toBeUndefined();
    const enable = await call(c, "enable_endpoint", args);
    await call(c, "enable_endpoint", { ...args, confirm: true, planToken: enable.body.planToken });
    expect((await h.call("GET", `${V1}/app/${X.app}/endpoint/${X.ok}`)).body.disabled).toBe(false);
  });

  test("replay: the dry run counts, the confirmed call starts the task", async () => {
    const c = await client(adminKey);
    const args = { app: "mcp-acme", endpoint: "ok", kind: "bulk-replay", since: "1h" };
    const plan = await call(c, "replay_endpoint", args);
    expect(plan.isError, JSON.stringify(plan.body)).toBe(false);
    expect(plan.body.plan.wouldSend).toBe(2);
    const started = await call(c, "replay_endpoint", {
      ...args,
      confirm: true,
      planToken: plan.body.planToken,
    });
    expect(started.body.result).toMatchObject({ task: "endpoint.bulk-replay" });
    const task = await h.call("GET", `${V1}/background-task/${started.body.result.id}`);
    expect(task.body.data).toMatchObject({ dryRun: false });
  });
});

describe("hookrelay mcp over stdio", { timeout: 60_000 }, () => {
  test("an MCP client spawns it, lists its tools and calls one", async () => {
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [path.join(ROOT, "dist/cli/main.js"), "mcp", "--url", url, "--key", adminKey],
      env: { PATH: process.env.PATH ?? "", HOOKRELAY_LOG_LEVEL: "warn" },
      stderr: "pipe",
    });
    const c = new Client({ name: "hookrelay-stdio-test", version: "1.0.0" });
    await c.connect(transport);
    try {
      const names = (await c.listTools()).tools.map((t) => t.name);
      expect(names).toContain("requeue_dead_letters");
      const r = await call(c, "get_message", { app: "mcp-acme", message: "refund-2" });
      expect(r.body.message.id).toBe(X.refunded[1]);
    } finally {
      await c.close();
    }
  });

  test("it ends by itself when the client closes its stdin", async () => {
    const r = await runCli(["mcp", "--url", url, "--key", adminKey], { stdin: "" });
    expect(r.code, show(r)).toBe(0);
    expect(r.stdout).toBe("");
    expect(r.stderr).toMatch(
      /^hookrelay mcp: serving http:\/\/127\.0\.0\.1:\d+ on stdio \(admin key: reads and actions\)\n$/,
    );
  });

  test("without its optional dependencies it says what to install", async () => {
    const missing = Object.assign(
      new Error(
        "Cannot find package '@modelcontextprotocol/sdk' imported from /x/dist/mcp/server.js",
      ),
      { code: "ERR_MODULE_NOT_FOUND" },
    );
    await expect(loadMcp(() => Promise.reject(missing))).rejects.toMatchObject({
      code: "invalid_config",
      message: expect.stringMatching(/npm install @modelcontextprotocol\/sdk zod$/),
    });
    const other = Object.assign(new Error("Cannot find module './gone.js'"), {
      code: "ERR_MODULE_NOT_FOUND",
    });
    await expect(loadMcp(() => Promise.reject(other))).rejects.toBe(other);
    expect(typeof (await loadMcp()).serveMcpOnStdio).toBe("function");
  });

  test("a refused key or an unreachable server stops it at once, saying so", async () => {
    const r = await runCli(["mcp", "--url", url, "--key", "hr_admin_wrong"], { stdin: "" });
    expect(r.code, show(r)).toBe(1);
    expect(r.stderr).toMatch(/refused the key given by --key \(401/);
    expect(r.stdout).toBe("");
    const down = await runCli(["mcp", "--url", "http://127.0.0.1:9", "--key", adminKey], {
      stdin: "",
    });
    expect(down.code, show(down)).toBe(1);
    expect(down.stderr).toMatch(
      /^hookrelay: cannot reach hookrelay at http:\/\/127\.0\.0\.1:9 \(.+\)\n$/,
    );
  });
});
