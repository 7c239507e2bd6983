/**
 * Postback endpoints from the CLI (README.md, Postbacks): `endpoint add --method GET` with
 * a URL template and the template options, `endpoint update` changing and resetting them,
 * and a template the server refuses (exit 1, the server's reason with its position). The
 * CLI runs in process (helpers/cli.ts runCliInProcess) against a listening API.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, expect, test } from "vitest";
import { createApiKey } from "../src/api/auth.ts";
import { cliAgainst, listenOnLoopback, show } from "./helpers/cli.ts";
import { type Harness, startHarness } from "./helpers/harness.ts";

const V1 = "/api/v1";
let h: Harness;
let dir: string;
let server: { url: string; key: string };
let appId: string;

const cli = cliAgainst(() => ({ ...server, dir }));

beforeAll(async () => {
  h = await startHarness();
  dir = await mkdtemp(path.join(tmpdir(), "hookrelay-postback-cli-"));
  const key = await createApiKey(h.db.pool, { role: "admin" }, "postback cli test");
  server = { url: await listenOnLoopback(h.api), key: key.key };
  appId = (await h.call("POST", `${V1}/app`, { name: "cli postbacks" })).body.id;
});
afterAll(async () => {
  await h?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const TEMPLATE = "http://127.0.0.1:9/{$token}/postback?subid={subid}&payout={payout}";

test("endpoint add --method GET with a URL template and its options; update changes and resets them", {
  timeout: 60_000,
}, async () => {
  const add = await cli([
    "endpoint",
    "add",
    appId,
    TEMPLATE,
    "--method",
    "get",
    "--url-token",
    "k3y",
    "--missing-fields",
    "empty",
    "--success-contains",
    "OK",
    "--success-not-contains",
    "DUPLICATE",
    "--success-not-contains",
    "error",
    "--success-ignore-case",
    "--body-failure",
    "permanent",
    "--json",
  ]);
  expect(add.code, show(add)).toBe(0);
  const created = JSON.parse(add.stdout);
  expect(add.stdout).not.toContain("k3y");
  const got = (await h.call("GET", `${V1}/app/${appId}/endpoint/${created.id}`)).body;
  expect(got).toMatchObject({
    url: TEMPLATE,
    method: "GET",
    urlToken: "***",
    missingFields: "empty",
    successRule: {
      bodyContains: ["OK"],
      bodyNotContains: ["DUPLICATE", "error"],
      ignoreCase: true,
      onFailure: "permanent",
    },
  });

  const upd = await cli([
    "endpoint",
    "update",
    appId,
    created.id,
    "--method",
    "PUT",
    "--body-format",
    "form",
    "--missing-fields",
    "default",
    "--no-success-rule",
    "--json",
  ]);
  expect(upd.code, show(upd)).toBe(0);
  expect(JSON.parse(upd.stdout)).toMatchObject({
    method: "PUT",
    bodyFormat: "form",
    missingFields: "fail",
    successRule: null,
    urlToken: "***",
  });

  const back = await cli([
    "endpoint",
    "update",
    appId,
    created.id,
    "--method",
    "default",
    "--body-format",
    "default",
    "--json",
  ]);
  expect(JSON.parse(back.stdout)).toMatchObject({ method: "POST", bodyFormat: "json" });

  const bad = await cli(["endpoint", "add", appId, "http://127.0.0.1:9/pb?x={$nope}"]);
  expect(bad.code, show(bad)).toBe(1);
  expect(bad.stderr).toMatch(/unknown built-in \{\$nope\}.*position 25/);

  const wrong = await cli(["endpoint", "add", appId, TEMPLATE, "--method", "PATCH"]);
  expect(wrong.code).toBe(2);
  expect(wrong.stderr).toMatch(/expected one of POST, GET, PUT/);
});
