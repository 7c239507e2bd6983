/**
 * `hookrelay endpoint add <app> <url>` with a broker URL (docs/destinations.md): the
 * endpoint is made with its destination kind, and what the CLI prints carries the password
 * only as ***. The CLI runs in process (helpers/cli.ts) against a listening API.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, expect, test } from "vitest";
import { createApiKey } from "../src/api/auth.ts";
import { listenOnLoopback, runCliInProcess, show } from "./helpers/cli.ts";
import { type Harness, startHarness } from "./helpers/harness.ts";

let h: Harness;
let dir: string;
let server: { url: string; key: string };

const cli = (args: string[]) =>
  runCliInProcess(args, {
    env: { HOOKRELAY_URL: server.url, HOOKRELAY_KEY: server.key, HOOKRELAY_DATA_DIR: dir },
  });

beforeAll(async () => {
  h = await startHarness();
  dir = await mkdtemp(path.join(tmpdir(), "hookrelay-cli-broker-"));
  const key = await createApiKey(h.db.pool, { role: "admin" }, "cli broker test");
  server = { url: await listenOnLoopback(h.api), key: key.key };
});
afterAll(async () => {
  await h?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

test("endpoint add takes a NATS JetStream URL; the password is printed as ***", async () => {
  await h.call("POST", "/api/v1/app", { name: "brokers", uid: "cli-brokers" });
  const r = await cli([
    "endpoint",
    "add",
    "cli-brokers",
    "nats://hooks:cli-pass-77@127.0.0.1:4222?subject=orders.paid&stream=ORDERS",
    "--json",
  ]);
  expect(r.code, show(r)).toBe(0);
  const made = JSON.parse(r.stdout);
  expect(made.destinationKind).toBe("nats");
  expect(made.url).toBe("nats://hooks:***@127.0.0.1:4222?subject=orders.paid&stream=ORDERS");
  expect(r.stdout).not.toContain("cli-pass-77");

  const bad = await cli(["endpoint", "add", "cli-brokers", "amqp://h:p@127.0.0.1/?queue=q"]);
  expect(bad.code).not.toBe(0);
  expect(bad.stderr).toMatch(/exchange and routingKey, not "queue"/);
});
