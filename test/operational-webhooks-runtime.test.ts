/**
 * Operational webhooks as a deployment turns them on (docs/operational-webhooks.md): the
 * HOOKRELAY_OPERATIONAL_WEBHOOK_URL variable, read by loadConfig, makes startRuntime point
 * the operator application's `operational` endpoint at it; the API and the worker of that
 * process then raise events, delivered over real HTTP to a receiver on 127.0.0.1 and
 * verified with the secret the API shows for that endpoint. A restart with another URL
 * re-points the same endpoint and keeps its secret.
 */
import { afterAll, beforeAll, expect, test } from "vitest";
import { loadConfig } from "../src/config.ts";
import { silentLogger } from "../src/logger.ts";
import { verifyWebhookMessage } from "../src/receiver/index.ts";
import { type Runtime, startRuntime } from "../src/runtime.ts";
import { makeRedactor } from "../src/security/redact.ts";
import { createTestDb, type TestDb } from "./helpers/db.ts";
import { testConfig } from "./helpers/harness.ts";
import { type Receiver, startReceiver, waitFor } from "./helpers/receiver.ts";

const V1 = "/api/v1";
const ADMIN = "hr_admin_operational_runtime_test_key";

let db: TestDb;
let op: Receiver;
let runtime: Runtime | undefined;

beforeAll(async () => {
  db = await createTestDb();
  op = await startReceiver(() => ({ status: 204 }));
});
afterAll(async () => {
  await runtime?.stop();
  await op?.close();
  await db?.drop();
});

async function start(path: string): Promise<Runtime> {
  const env = { HOOKRELAY_OPERATIONAL_WEBHOOK_URL: `${op.url}${path}` };
  const fromEnv = loadConfig(env);
  expect(fromEnv.operationalWebhookUrl).toBe(`${op.url}${path}`);
  const config = testConfig({
    databaseUrl: db.url,
    host: "127.0.0.1",
    port: 0,
    adminKey: ADMIN,
    dbPoolSize: 5,
    operationalWebhookUrl: fromEnv.operationalWebhookUrl,
  });
  return startRuntime(
    config,
    { api: true, worker: true },
    { logger: silentLogger, redactor: makeRedactor() },
  );
}

async function api(rt: Runtime, method: string, path: string, body?: unknown) {
  const res = await fetch(`${rt.apiUrl}${V1}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${ADMIN}`,
      ...(body !== undefined && { "content-type": "application/json" }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  // biome-ignore lint/suspicious/noExplicitAny: response JSON, asserted field by field
  return { status: res.status, body: (await res.json()) as any };
}

async function createdEventAt(path: string, secret: string, appId: string) {
  await waitFor(() => op.on(path).length > 0, 20_000, `an event at ${path}`);
  const [req] = op.on(path);
  const event = verifyWebhookMessage<{ type: string; data: Record<string, unknown> }>({
    secret,
    headers: req!.headers as Record<string, string>,
    body: req!.body,
  });
  expect(event.payload.type).toBe("endpoint.created");
  expect(event.payload.data.appId).toBe(appId);
  return event;
}

test("the variable turns them on; the secret is read from the API; a restart re-points the endpoint and keeps the secret", async () => {
  runtime = await start("/ops-a");
  const secret = await api(runtime, "GET", "/app/hookrelay-operator/endpoint/operational/secret");
  expect(secret.status).toBe(200);
  expect(secret.body.key).toMatch(/^whsec_/);
  const ep = await api(runtime, "GET", "/app/hookrelay-operator/endpoint/operational");
  expect(ep.body).toMatchObject({
    url: `${op.url}/ops-a`,
    maxAttempts: 20,
    eventTypes: expect.arrayContaining(["message.attempt.exhausted", "endpoint.disabled"]),
  });
  const app = await api(runtime, "POST", "/app", { name: "A", uid: "rt-a" });
  await api(runtime, "POST", `/app/${app.body.id}/endpoint`, { url: "http://127.0.0.1:9/a" });
  await createdEventAt("/ops-a", secret.body.key, app.body.id);
  await runtime.stop();

  runtime = await start("/ops-b");
  const again = await api(runtime, "GET", "/app/hookrelay-operator/endpoint/operational/secret");
  expect(again.body.key).toBe(secret.body.key);
  const app2 = await api(runtime, "POST", "/app", { name: "B", uid: "rt-b" });
  await api(runtime, "POST", `/app/${app2.body.id}/endpoint`, { url: "http://127.0.0.1:9/b" });
  await createdEventAt("/ops-b", secret.body.key, app2.body.id);
  expect(op.on("/ops-a")).toHaveLength(1);
});
