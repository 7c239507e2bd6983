/**
 * OAuth2 from the CLI (docs/oauth2.md): `endpoint add` with the --oauth-* flags (the secret
 * read from a file), answered with the secret as ***; `endpoint update` changing the auth
 * method while keeping the stored secret, then removing OAuth2 with "default"; an unknown
 * auth method refused before any request, a token URL the server refuses (exit 1, its
 * code). The CLI runs in process against a listening API.
 */
import { randomBytes } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, expect, test } from "vitest";
import { createApiKey } from "../src/api/auth.ts";
import { cliAgainst, listenOnLoopback, show } from "./helpers/cli.ts";
import { type Harness, startHarness } from "./helpers/harness.ts";

const V1 = "/api/v1";
const SECRET = `cli-${randomBytes(8).toString("hex")}`;
let h: Harness;
let dir: string;
let server: { url: string; key: string };
let appId: string;

const cli = cliAgainst(() => ({ ...server, dir }));

beforeAll(async () => {
  h = await startHarness({ encryptionKey: randomBytes(32).toString("base64") });
  dir = await mkdtemp(path.join(tmpdir(), "hookrelay-oauth2-cli-"));
  await writeFile(path.join(dir, "secret"), `${SECRET}\n`);
  const key = await createApiKey(h.db.pool, { role: "admin" }, "oauth2 cli test");
  server = { url: await listenOnLoopback(h.api), key: key.key };
  appId = (await h.call("POST", `${V1}/app`, { name: "cli oauth2" })).body.id;
}, 60_000);
afterAll(async () => {
  await h?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const storedSecret = async (id: string) =>
  (await h.db.pool.query("select oauth2_secret from endpoints where id = $1", [id])).rows[0]
    ?.oauth2_secret as string | null;

test("endpoint add with OAuth2; update keeps the secret; default removes it", {
  timeout: 60_000,
}, async () => {
  const add = await cli([
    "endpoint",
    "add",
    appId,
    "http://127.0.0.1:9/hook",
    "--oauth-token-url",
    "http://127.0.0.1:9/token",
    "--oauth-client-id",
    "relay",
    "--oauth-client-secret-file",
    path.join(dir, "secret"),
    "--oauth-scope",
    "hooks",
    "--json",
  ]);
  expect(add.code, show(add)).toBe(0);
  expect(add.stdout).not.toContain(SECRET);
  const created = JSON.parse(add.stdout);
  expect(created.oauth2).toEqual({
    tokenUrl: "http://127.0.0.1:9/token",
    clientId: "relay",
    clientSecret: "***",
    scope: "hooks",
    audience: null,
    authMethod: "client_secret_basic",
  });
  const sealed = await storedSecret(created.id);
  expect(sealed).not.toContain(SECRET);

  const update = await cli([
    "endpoint",
    "update",
    appId,
    created.id,
    "--oauth-token-url",
    "http://127.0.0.1:9/token2",
    "--oauth-client-id",
    "relay",
    "--oauth-auth-method",
    "client_secret_post",
    "--json",
  ]);
  expect(update.code, show(update)).toBe(0);
  expect(JSON.parse(update.stdout).oauth2).toMatchObject({
    tokenUrl: "http://127.0.0.1:9/token2",
    clientSecret: "***",
    authMethod: "client_secret_post",
  });
  expect(await storedSecret(created.id)).toBe(sealed);

  const removed = await cli([
    "endpoint",
    "update",
    appId,
    created.id,
    "--oauth-token-url",
    "default",
  ]);
  expect(removed.code, show(removed)).toBe(0);
  const got = (await h.call("GET", `${V1}/app/${appId}/endpoint/${created.id}`)).body;
  expect(got.oauth2).toBeNull();
  expect(await storedSecret(created.id)).toBeNull();
});

test("refusals: an unknown auth method (exit 2), a token URL the server refuses (exit 1)", {
  timeout: 60_000,
}, async () => {
  const method = await cli([
    "endpoint",
    "add",
    appId,
    "http://127.0.0.1:9/x",
    "--oauth-auth-method",
    "private_key_jwt",
  ]);
  expect(method.code, show(method)).toBe(2);
  expect(method.stderr).toContain("client_secret_basic, client_secret_post");
  const ftp = await cli([
    "endpoint",
    "add",
    appId,
    "http://127.0.0.1:9/x",
    "--oauth-token-url",
    "ftp://idp.example/token",
    "--oauth-client-id",
    "relay",
    "--oauth-client-secret",
    "x",
  ]);
  expect(ftp.code, show(ftp)).toBe(1);
  expect(ftp.stderr).toContain("invalid_oauth");
  const noSecret = await cli([
    "endpoint",
    "add",
    appId,
    "http://127.0.0.1:9/x",
    "--oauth-token-url",
    "http://127.0.0.1:9/token",
    "--oauth-client-id",
    "relay",
  ]);
  expect(noSecret.code, show(noSecret)).toBe(1);
  expect(noSecret.stderr).toContain("this endpoint keeps none: send the secret itself");
});
