/**
 * Egress from the CLI (docs/egress.md): `endpoint add` with --egress-pool, --proxy-url and
 * the mTLS files, answered masked; `endpoint update` removing them with "default"; a bad
 * proxy URL and an unknown pool refused by the server (exit 1, its code). The CLI runs in
 * process (helpers/cli.ts runCliInProcess) against a listening API.
 */
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, expect, test } from "vitest";
import { createApiKey } from "../src/api/auth.ts";
import { cliAgainst, listenOnLoopback, show } from "./helpers/cli.ts";
import { type Harness, startHarness } from "./helpers/harness.ts";
import { makeCertificates, type TlsFiles } from "./helpers/tls-certificates.ts";

const V1 = "/api/v1";
let h: Harness;
let dir: string;
let files: TlsFiles;
let server: { url: string; key: string };
let appId: string;

const cli = cliAgainst(() => ({ ...server, dir }));

beforeAll(async () => {
  h = await startHarness({
    encryptionKey: randomBytes(32).toString("base64"),
    egress: {
      proxy: null,
      pools: {
        fixed: { proxy: null, localAddress: null, publicIps: ["203.0.113.9"], description: "" },
      },
    },
  });
  dir = await mkdtemp(path.join(tmpdir(), "hookrelay-egress-cli-"));
  files = await makeCertificates(path.join(dir, "pki"));
  const key = await createApiKey(h.db.pool, { role: "admin" }, "egress cli test");
  server = { url: await listenOnLoopback(h.api), key: key.key };
  appId = (await h.call("POST", `${V1}/app`, { name: "cli egress" })).body.id;
}, 60_000);
afterAll(async () => {
  await h?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

test("endpoint add with a pool, a proxy and a client certificate; update removes them", {
  timeout: 60_000,
}, async () => {
  const add = await cli([
    "endpoint",
    "add",
    appId,
    "https://127.0.0.1:9/hook",
    "--egress-pool",
    "fixed",
    "--proxy-url",
    "socks5://relay:s0cks-pass@127.0.0.1:1080",
    "--tls-client-cert",
    files.clientCert,
    "--tls-client-key",
    files.clientKey,
    "--tls-ca",
    files.ca,
    "--json",
  ]);
  expect(add.code, show(add)).toBe(0);
  expect(add.stdout).not.toContain("s0cks-pass");
  expect(add.stdout).not.toContain("PRIVATE KEY");
  const created = JSON.parse(add.stdout);
  expect(created).toMatchObject({
    egressPool: "fixed",
    proxyUrl: "socks5://relay:***@127.0.0.1:1080",
    tlsClientCert: "***",
    tlsClientKey: "***",
  });
  expect(created.tlsCa).toContain("BEGIN CERTIFICATE");

  const update = await cli([
    "endpoint",
    "update",
    appId,
    created.id,
    "--proxy-url",
    "default",
    "--tls-client-cert",
    "default",
    "--json",
  ]);
  expect(update.code, show(update)).toBe(0);
  const got = (await h.call("GET", `${V1}/app/${appId}/endpoint/${created.id}`)).body;
  expect(got).toMatchObject({
    egressPool: "fixed",
    proxyUrl: null,
    tlsClientCert: null,
    tlsClientKey: null,
  });
});

test("egress lists the pools' public IPs; app create takes --egress-pool", {
  timeout: 60_000,
}, async () => {
  const list = await cli(["egress"]);
  expect(list.code, show(list)).toBe(0);
  expect(list.stdout).toMatch(/fixed\s+203\.0\.113\.9/);
  const app = await cli(["app", "create", "pooled", "--egress-pool", "fixed", "--json"]);
  expect(app.code, show(app)).toBe(0);
  expect(JSON.parse(app.stdout).egressPool).toBe("fixed");
});

test("the server's refusals: a bad proxy URL, an unknown pool", { timeout: 60_000 }, async () => {
  const bad = await cli([
    "endpoint",
    "add",
    appId,
    "https://127.0.0.1:9/x",
    "--proxy-url",
    "ftp://p:21",
  ]);
  expect(bad.code, show(bad)).toBe(1);
  expect(bad.stderr).toContain("invalid_proxy_url");
  const pool = await cli([
    "endpoint",
    "add",
    appId,
    "https://127.0.0.1:9/x",
    "--egress-pool",
    "nope",
  ]);
  expect(pool.code, show(pool)).toBe(1);
  expect(pool.stderr).toContain("is not configured");
});
