/**
 * `hookrelay endpoint headers <app> <endpoint>` reads an endpoint's custom headers back
 * through the API, sensitive values masked; by id or uid; an unknown endpoint is exit 1.
 * The CLI runs in process (helpers/cli.ts) against a listening API.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, expect, test } from "vitest";
import { createApiKey } from "../src/api/auth.ts";
import { listenOnLoopback, runCliInProcess, show } from "./helpers/cli.ts";
import { type Harness, startHarness } from "./helpers/harness.ts";

const V1 = "/api/v1";
let h: Harness;
let dir: string;
let server: { url: string; key: string };

const cli = (args: string[]) =>
  runCliInProcess(args, {
    env: { HOOKRELAY_URL: server.url, HOOKRELAY_KEY: server.key, HOOKRELAY_DATA_DIR: dir },
  });

beforeAll(async () => {
  h = await startHarness();
  dir = await mkdtemp(path.join(tmpdir(), "hookrelay-cli-headers-"));
  const key = await createApiKey(h.db.pool, { role: "admin" }, "cli headers test");
  server = { url: await listenOnLoopback(h.api), key: key.key };
});
afterAll(async () => {
  await h?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

test("endpoint headers prints them, secrets masked; --json gives the API's answer", async () => {
  const app = await h.call("POST", `${V1}/app`, { name: "hdr", uid: "cli-hdr" });
  const ep = await h.call("POST", `${V1}/app/${app.body.id}/endpoint`, {
    url: "http://127.0.0.1:9/ep",
    uid: "billing",
    headers: { "X-Team": "core", Authorization: "Bearer very-secret" },
  });
  expect(ep.status).toBe(201);

  const r = await cli(["endpoint", "headers", "cli-hdr", "billing"]);
  expect(r.code, show(r)).toBe(0);
  expect(r.stdout).toMatch(/X-Team\s+core/);
  expect(r.stdout).toMatch(/Authorization\s+\*\*\*\s+sensitive \(masked\)/);
  expect(r.stdout).not.toContain("very-secret");

  const json = await cli(["endpoint", "headers", "cli-hdr", ep.body.id, "--json"]);
  expect(json.code, show(json)).toBe(0);
  expect(JSON.parse(json.stdout)).toEqual({
    headers: { "X-Team": "core", Authorization: "***" },
    sensitive: ["Authorization"],
  });

  const none = await h.call("POST", `${V1}/app/${app.body.id}/endpoint`, {
    url: "http://127.0.0.1:9/none",
  });
  const empty = await cli(["endpoint", "headers", "cli-hdr", none.body.id]);
  expect(empty.stdout).toBe("no custom headers\n");

  const unknown = await cli(["endpoint", "headers", "cli-hdr", "no-such-endpoint"]);
  expect(unknown.code, show(unknown)).toBe(1);
  expect(unknown.stderr).toMatch(/endpoint not found/);
});
