/**
 * Broker destinations in the dashboard and the portal (docs/destinations.md): the endpoint
 * pages say where a broker endpoint publishes, its password only as ***; the shared form
 * adds one (portal) and saves an edit that keeps the masked password (dashboard).
 */
import { afterAll, beforeAll, expect, test } from "vitest";
import { makeSecretBox } from "../src/security/secret-box.ts";
import { dashboardClient } from "./helpers/dashboard-client.ts";
import { type Harness, startHarness } from "./helpers/harness.ts";
import { openPortal } from "./helpers/portal-client.ts";

const KEY = Buffer.alloc(32, 3).toString("base64");
const V1 = "/api/v1";
let h: Harness;
let appId: string;

beforeAll(async () => {
  h = await startHarness({ encryptionKey: KEY });
  appId = (await h.call("POST", `${V1}/app`, { name: "Brokers" })).body.id;
});
afterAll(() => h?.close());

const facts = (page: string) => /<dd data-testid="delivery">([\s\S]*?)<\/dd>/.exec(page)?.[1] ?? "";

test("the dashboard shows where a RabbitMQ endpoint publishes, and an edit keeps its password", async () => {
  const made = await h.call("POST", `${V1}/app/${appId}/endpoint`, {
    url: "amqp://hooks:dash-secret-9@127.0.0.1:5672/prod?exchange=events&routingKey=orders",
  });
  expect(made.status).toBe(201);
  const id = made.body.id;
  const admin = dashboardClient(h.api);
  await admin.signIn(h.adminKey);
  const page = await admin.get(`/dashboard/endpoints/${id}`);
  expect(page.statusCode).toBe(200);
  expect(facts(page.body)).toContain(
    "RabbitMQ: published to exchange &quot;events&quot; of virtual host &quot;prod&quot;, routing key &quot;orders&quot;",
  );
  expect(page.body).not.toContain("dash-secret-9");

  const form = await admin.get(`/dashboard/endpoints/${id}/edit`);
  expect(form.body).toContain(
    "amqp://hooks:***@127.0.0.1:5672/prod?exchange=events&amp;routingKey=orders",
  );
  expect(form.body).not.toContain("dash-secret-9");
  const saved = await admin.post(`/dashboard/endpoints/${id}/edit`, {
    url: "amqp://hooks:***@127.0.0.1:5672/prod?exchange=events&routingKey=orders",
    description: "edited",
    method: "POST",
    bodyFormat: "json",
  });
  expect(saved.statusCode, saved.body).toBe(303);
  const { rows } = await h.db.pool.query(
    "select description, destination_secret from endpoints where id = $1",
    [id],
  );
  expect(rows[0].description).toBe("edited");
  expect(makeSecretBox(KEY).open(rows[0].destination_secret)).toBe("dash-secret-9");
});

test("a customer adds a NATS JetStream endpoint in the portal and sees where it publishes", async () => {
  const link = await h.call("POST", `${V1}/auth/app-portal-access/${appId}`, {});
  const c = await openPortal(h.api, link.body.token);
  const made = await c.post("/portal/endpoints", {
    url: "nats://tenant:portal-secret-4@127.0.0.1:4222?subject=shop.orders&stream=SHOP",
    description: "stream",
  });
  expect(made.statusCode, made.body).toBe(303);
  const page = await c.get(made.headers.location!.split("?")[0]!);
  expect(page.statusCode).toBe(200);
  expect(facts(page.body)).toContain(
    "NATS JetStream: published to subject &quot;shop.orders&quot; (stream &quot;SHOP&quot;)",
  );
  expect(page.body).toContain("nats://tenant:***@127.0.0.1:4222?subject=shop.orders");
  expect(page.body).not.toContain("portal-secret-4");
});
