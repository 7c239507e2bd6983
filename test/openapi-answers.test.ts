/**
 * The answer shapes the OpenAPI document takes from src/api/operation-docs.ts (for routes
 * without a response schema of their own) are promises too: each such operation is called
 * here for real, and its answer is validated against the document's schema for its status
 * (Ajv; a 204 must have no body). A new entry with a response fails until it is called here.
 */
import { Ajv } from "ajv";
import { afterAll, beforeAll, expect, test } from "vitest";
import { OPERATION_DOCS } from "../src/api/operation-docs.ts";
import { type CallResult, type Harness, startHarness } from "./helpers/harness.ts";
import { type Receiver, startReceiver, waitFor } from "./helpers/receiver.ts";
import { shownDeliveryIds } from "./helpers/seeded-deliveries.ts";

const V1 = "/api/v1";

interface Answer {
  operation: string;
  status: number;
  body: unknown;
  raw: string;
}

type Doc = {
  paths: Record<
    string,
    Record<string, { responses: Record<string, { content?: Record<string, { schema: object }> }> }>
  >;
};

let h: Harness;
let rx: Receiver;
let doc: Doc;
const answers: Answer[] = [];

/** Calls `url` as `operation` ("METHOD /openapi/path") and keeps the answer. */
async function hit(
  operation: string,
  url: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<CallResult> {
  const method = operation.split(" ")[0]!;
  const res = await h.api.inject({
    method: method as "GET",
    url,
    headers: {
      authorization: `Bearer ${h.adminKey}`,
      ...(body !== undefined && { "content-type": "application/json" }),
      ...headers,
    },
    ...(body !== undefined && { payload: JSON.stringify(body) }),
  });
  const parsed = res.body === "" ? undefined : res.json();
  answers.push({ operation, status: res.statusCode, body: parsed, raw: res.body });
  return { status: res.statusCode, body: parsed, headers: res.headers };
}

beforeAll(async () => {
  h = await startHarness();
  rx = await startReceiver();
  doc = (await h.api.inject({ method: "GET", url: "/docs/json" })).json() as Doc;
});
afterAll(async () => {
  await h?.close();
  await rx?.close();
});

test("every answer shape operation-docs.ts gives is what the route answers", async () => {
  await hit("GET /api/v1/health", `${V1}/health`);
  await hit("GET /api/v1/health/ping", `${V1}/health/ping`);

  const app = (await hit("POST /api/v1/app", `${V1}/app`, { name: "docs", uid: "docs-app" })).body;
  await hit("POST /api/v1/app", `${V1}/app?get_if_exists=true`, { name: "docs", uid: "docs-app" });
  await hit("GET /api/v1/app", `${V1}/app`);
  await hit("GET /api/v1/app/{appId}", `${V1}/app/${app.id}`);
  await hit("PUT /api/v1/app/{appId}", `${V1}/app/${app.id}`, { name: "docs 2" });
  const upserted = await hit("PUT /api/v1/app/{appId}", `${V1}/app/docs-upsert`, { name: "u" });
  await hit("PATCH /api/v1/app/{appId}", `${V1}/app/${app.id}`, { name: "docs 3" });

  const ep = (
    await hit("POST /api/v1/app/{appId}/endpoint", `${V1}/app/${app.id}/endpoint`, {
      url: `${rx.url}/docs`,
    })
  ).body;
  const epUrl = `${V1}/app/${app.id}/endpoint/${ep.id}`;
  await hit("PUT /api/v1/app/{appId}/endpoint/{endpointId}", epUrl, { url: `${rx.url}/docs` });
  await hit(
    "PUT /api/v1/app/{appId}/endpoint/{endpointId}",
    `${V1}/app/${app.id}/endpoint/ep-new`,
    {
      url: `${rx.url}/new`,
    },
  );
  await hit("PATCH /api/v1/app/{appId}/endpoint/{endpointId}", epUrl, { description: "d" });
  await hit(
    "POST /api/v1/app/{appId}/endpoint/{endpointId}/secret/rotate",
    `${epUrl}/secret/rotate`,
    {},
  );
  await hit("PUT /api/v1/app/{appId}/endpoint/{endpointId}/headers", `${epUrl}/headers`, {
    headers: { "x-one": "1" },
  });
  await hit("PATCH /api/v1/app/{appId}/endpoint/{endpointId}/headers", `${epUrl}/headers`, {
    headers: { "x-two": "2" },
  });

  const et = { name: "order.paid", description: "an order was paid" };
  await hit("POST /api/v1/event-type", `${V1}/event-type`, et);
  await hit("GET /api/v1/event-type/{name}", `${V1}/event-type/order.paid`);
  await hit("PUT /api/v1/event-type/{name}", `${V1}/event-type/order.paid`, { description: "p" });
  await hit("PUT /api/v1/event-type/{name}", `${V1}/event-type/order.new`, { description: "n" });
  await hit("PATCH /api/v1/event-type/{name}", `${V1}/event-type/order.paid`, { description: "x" });
  await hit("DELETE /api/v1/event-type/{name}", `${V1}/event-type/order.new`);

  const msgBody = { eventType: "order.paid", eventId: "evt-docs", payload: { a: 1 } };
  const msg = (await hit("POST /api/v1/app/{appId}/msg", `${V1}/app/${app.id}/msg`, msgBody)).body;
  await hit("POST /api/v1/app/{appId}/msg", `${V1}/app/${app.id}/msg`, msgBody);
  await hit(
    "POST /api/v1/app/{appId}/endpoint/{endpointId}/send-example",
    `${epUrl}/send-example`,
    { eventType: "order.paid" },
  );

  // a worker makes the attempts the attempt routes read
  h.startWorker();
  await waitFor(() => rx.on("/docs").length >= 2, 15_000, "deliveries to the endpoint");
  let attempts: CallResult | undefined;
  await waitFor(
    async () => {
      attempts = await h.call("GET", `${V1}/app/${app.id}/attempt/msg/${msg.id}`);
      return attempts.body.data?.length > 0;
    },
    15_000,
    "an attempt row",
  );
  const attemptId = attempts!.body.data[0].id;
  await hit(
    "GET /api/v1/app/{appId}/msg/{msgId}/attempt/{attemptId}",
    `${V1}/app/${app.id}/msg/${msg.id}/attempt/${attemptId}`,
  );
  await hit("GET /api/v1/app/{appId}/endpoint/{endpointId}/msg", `${epUrl}/msg`);
  await hit(
    "POST /api/v1/app/{appId}/msg/{msgId}/endpoint/{endpointId}/resend",
    `${V1}/app/${app.id}/msg/${msg.id}/endpoint/${ep.id}/resend`,
  );
  await hit(
    "POST /api/v1/app/{appId}/endpoint/{endpointId}/circuit/reset",
    `${epUrl}/circuit/reset`,
  );
  await hit(
    "DELETE /api/v1/app/{appId}/msg/{msgId}/content",
    `${V1}/app/${app.id}/msg/${msg.id}/content`,
  );

  // a delivery to cancel: one for a disabled endpoint waits, pending
  const held = (
    await hit("POST /api/v1/app/{appId}/endpoint", `${V1}/app/${app.id}/endpoint`, {
      url: `${rx.url}/held`,
      disabled: true,
    })
  ).body;
  await h.call("POST", `${V1}/app/${app.id}/msg`, { eventType: "order.paid", payload: {} });
  const { rows } = await h.db.pool.query(
    "select id from deliveries where endpoint_id = $1 and status = 'pending'",
    [held.id],
  );
  const dlv = await shownDeliveryIds(h.db.pool);
  await hit(
    "POST /api/v1/deliveries/{deliveryId}/cancel",
    `${V1}/deliveries/${dlv(rows[0].id)}/cancel`,
  );
  await hit("POST /api/v1/dead-letters/requeue", `${V1}/dead-letters/requeue`, {
    endpointId: ep.id,
    appId: app.id,
  });
  await hit("POST /api/v1/operations/purge", `${V1}/operations/purge`, {});
  await hit("POST /api/v1/operations/reencrypt-secrets", `${V1}/operations/reencrypt-secrets`, {});

  const key = (await hit("POST /api/v1/api-keys", `${V1}/api-keys`, { role: "app", appId: app.id }))
    .body;
  await hit("GET /api/v1/api-keys", `${V1}/api-keys`);
  await hit("DELETE /api/v1/api-keys/{keyId}", `${V1}/api-keys/${key.id}`);

  const link = (await h.call("POST", `${V1}/auth/app-portal-access/${app.id}`, {})).body;
  const other = (await h.call("POST", `${V1}/auth/app-portal-access/${app.id}`, {})).body;
  const links = await hit(
    "GET /api/v1/auth/app/{appId}/portal-access",
    `${V1}/auth/app/${app.id}/portal-access`,
  );
  const linkId = links.body.data.find((t: { id: string }) => t.id !== other.id)?.id ?? link.id;
  await hit(
    "POST /api/v1/auth/app/{appId}/portal-access/{tokenId}/revoke",
    `${V1}/auth/app/${app.id}/portal-access/${linkId}/revoke`,
  );
  await hit("POST /api/v1/auth/logout", `${V1}/auth/logout`, undefined, {
    authorization: `Bearer ${other.token}`,
  });
  await hit("POST /api/v1/auth/app/{appId}/expire-all", `${V1}/auth/app/${app.id}/expire-all`, {});

  await hit("DELETE /api/v1/app/{appId}/endpoint/{endpointId}", epUrl);
  await hit("DELETE /api/v1/app/{appId}", `${V1}/app/${upserted.body.id}`);

  // every answer validates against the document's schema for its status
  const ajv = new Ajv({ strict: false, allErrors: true });
  const problems: string[] = [];
  for (const a of answers) {
    const [method, path] = a.operation.split(" ") as [string, string];
    const response = doc.paths[path]?.[method.toLowerCase()]?.responses[String(a.status)];
    if (a.status >= 300) {
      problems.push(`${a.operation}: answered ${a.status} ${a.raw.slice(0, 200)}`);
    } else if (response === undefined) {
      problems.push(`${a.operation}: ${a.status} is not in the document`);
    } else if (a.status === 204) {
      if (a.raw !== "") problems.push(`${a.operation}: a 204 with a body`);
    } else {
      const schema = response.content?.["application/json"]?.schema;
      if (schema === undefined) problems.push(`${a.operation}: ${a.status} has no schema`);
      else if (!ajv.validate(schema, a.body))
        problems.push(`${a.operation} ${a.status}: ${ajv.errorsText(ajv.errors)}`);
    }
  }
  expect(problems).toEqual([]);

  // every operation whose answer shape comes from operation-docs.ts was called
  const called = new Set(answers.map((a) => a.operation));
  const uncalled = Object.entries(OPERATION_DOCS)
    .filter(([name, d]) => d.response !== undefined && !called.has(name))
    .map(([name]) => name);
  expect(uncalled).toEqual([]);
});
