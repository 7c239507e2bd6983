/**
 * The response schemas of the routes the UIs read (src/api/response-schemas.ts and
 * health-responses.ts): each is the very object the in-process `read` derives its type
 * from (READ_ROUTES), and
 * serializing with it (fast-json-stringify, which writes only what a schema names and
 * coerces values to its types) sends exactly the text JSON.stringify of the handler's answer
 * sends, so no field of today's responses is lost, changed or moved. Every answer also
 * passes its schema (Ajv), so the types derived from the schemas tell the truth; routes that
 * send text they wrote themselves (raw-json.ts) are checked that way alone.
 */
import { Ajv } from "ajv";
import type { FastifyRequest } from "fastify";
import { afterAll, beforeAll, expect, test } from "vitest";
import { apiError } from "../src/api/errors.ts";
import type {
  AlertsResponse,
  HealthSummaryResponse,
  RequeuePlanResponse,
} from "../src/api/health-responses.ts";
import { READ_ROUTES, type ReadRoute, readUrl } from "../src/api/in-process.ts";
import type { Alert } from "../src/ops/alerts.ts";
import type { RequeuePlanRow } from "../src/ops/dead-letters.ts";
import type { HealthSummary } from "../src/ops/health-summary.ts";
import { buildTestApi, type Harness, startHarness, testConfig } from "./helpers/harness.ts";
import { waitFor } from "./helpers/receiver.ts";
import { newApp, newEndpoint, seed, V1 } from "./helpers/seeded-deliveries.ts";

let h: Harness;
/** what JSON.stringify made of each answer before serialization, by request */
const expected = new WeakMap<FastifyRequest, string>();
const mismatches: string[] = [];
/** routes (as registered) whose answer was compared, with how many answers */
const compared = new Map<string, number>();

beforeAll(async () => {
  h = await startHarness();
  h.api.addHook("preSerialization", async (request, _reply, payload) => {
    expected.set(request, JSON.stringify(payload));
    return payload;
  });
  const ajv = new Ajv({ strict: false, allErrors: true });
  h.api.addHook("onSend", async (request, reply, payload) => {
    const route = request.routeOptions.url ?? "?";
    if (reply.statusCode !== 200 || typeof payload !== "string" || !(route in READ_ROUTES)) return;
    compared.set(route, (compared.get(route) ?? 0) + 1);
    const before = expected.get(request);
    if (before !== undefined && payload !== before)
      mismatches.push(`${route}: sent\n${payload}\ninstead of\n${before}`);
    const validate = ajv.compile(READ_ROUTES[route as ReadRoute]);
    if (!validate(JSON.parse(payload)))
      mismatches.push(`${route}: ${ajv.errorsText(validate.errors)} in ${payload}`);
  });
});
afterAll(() => h?.close());

/** The properties a schema names, without the index signature of an open shape. */
type Named<T> = { [K in keyof T as string extends K ? never : K]: T[K] };
/** Compiles only if a `T` may be used where the schema's type is read. */
const fits =
  <U>() =>
  <T extends Named<U>>(_value?: T): true =>
    true;

test("what ops/ answers with fits the types derived from the schemas (checked by tsc)", () => {
  expect(fits<HealthSummaryResponse>()<HealthSummary>()).toBe(true);
  expect(fits<AlertsResponse["data"][number]>()<Alert>()).toBe(true);
  expect(fits<RequeuePlanResponse["endpoints"][number]>()<RequeuePlanRow>()).toBe(true);
});

test("each route of READ_ROUTES declares, as its 200 response, the schema its type comes from", async () => {
  const declared = new Map<string, unknown>();
  const api = await buildTestApi({
    pool: h.db.pool,
    config: testConfig(),
    docs: false,
    dashboard: false,
    portal: false,
    // the API calls authenticate first, with the matched route: read its schema, answer 401
    authenticate: async (request) => {
      const response = request.routeOptions.schema?.response as Record<number, unknown>;
      declared.set(request.routeOptions.url ?? "", response?.[200]);
      throw apiError("unauthorized", "reading route schemas");
    },
  });
  try {
    for (const route of Object.keys(READ_ROUTES) as ReadRoute[]) {
      await api.inject({ method: "GET", url: route.replace(/:\w+/g, "x") });
      expect(declared.has(route), route).toBe(true);
      expect(declared.get(route) === READ_ROUTES[route], route).toBe(true);
    }
  } finally {
    await api.close();
  }
});

test("every read route answers, through its schema, all that its handler returned", async () => {
  const appId = await newApp(h);
  // fails at once (nothing listens), dies on its first attempt and opens its circuit
  const failing = await newEndpoint(h, appId, {
    maxAttempts: 1,
    failureThreshold: 1,
    uid: "failing-one",
    description: "fails at once",
    filterTypes: ["order.created"],
    metadata: { team: "billing", "odd key": "ü ☃" },
    rateLimit: 10,
    headers: { Authorization: "Bearer not-shown" },
  });
  const quiet = await newEndpoint(h, appId, {
    method: "PUT",
    bodyFormat: "form",
    channels: ["eu"],
    signatureScheme: "v1+v1a",
  });
  const edOnly = await newEndpoint(h, appId, { signatureScheme: "v1a" });
  await seed(h.db.pool, [
    { endpointId: quiet.id, status: "dead_letter", code: 500, kind: "http_status", error: "no" },
    { endpointId: quiet.id, status: "dead_letter", code: null, kind: "timeout", error: null },
    { endpointId: quiet.id, status: "failed", code: 503, kind: "http_status", error: "later" },
    { endpointId: quiet.id, status: "pending" },
  ]);
  const sent = await h.call("POST", `${V1}/app/${appId}/msg`, {
    eventType: "order.created",
    payload: { n: 1, nested: { list: [1, "two", null] } },
  });
  expect(sent.status).toBe(202);
  const msgId: string = sent.body.id;
  h.startWorker();
  await waitFor(async () => {
    const dead = await h.call("GET", `${V1}/dead-letters?endpoint_id=${failing.id}`);
    return dead.body.data?.length === 1;
  });
  const read = async <R extends ReadRoute>(
    route: R,
    params: Parameters<typeof readUrl<R>>[1],
    query?: Record<string, string>,
  ) => {
    const res = await h.call("GET", readUrl(route, params, query));
    expect(res.status, `${route}: ${JSON.stringify(res.body)}`).toBe(200);
    return res.body;
  };
  await read("/api/v1/health/summary", {});
  await read("/api/v1/health/summary", {}, { app_id: appId });
  await read("/api/v1/alerts", {});
  expect((await read("/api/v1/dead-letters", {}, { app_id: appId })).data.length).toBe(3);
  expect((await read("/api/v1/dead-letters/analysis", {}, { app_id: appId })).data).toHaveLength(2);
  await read("/api/v1/dead-letters/requeue-plan", {}, { app_id: appId });
  const health = await read("/api/v1/app/:appId/endpoint/:endpointId/health", {
    appId,
    endpointId: failing.id,
  });
  expect(health.circuit.history.length).toBeGreaterThan(0);
  await read("/api/v1/app/:appId/endpoint/:endpointId/health", { appId, endpointId: quiet.id });
  // quiet's dead letters as one ordering key: the first is its blocked head
  await h.db.pool.query(
    "update deliveries set ordering_key = 'k' where endpoint_id = $1 and status = 'dead_letter'",
    [quiet.id],
  );
  const blocked = await read("/api/v1/app/:appId/endpoint/:endpointId/ordering-keys/blocked", {
    appId,
    endpointId: quiet.id,
  });
  expect(blocked.data).toHaveLength(1);
  const attempts = await read("/api/v1/app/:appId/attempt/endpoint/:endpointId", {
    appId,
    endpointId: failing.id,
  });
  expect(attempts.data).toHaveLength(1);
  await read("/api/v1/app/:appId/attempt/msg/:msgId", { appId, msgId });
  await read("/api/v1/app/:appId/msg/:msgId/endpoint", { appId, msgId });
  const endpoints = await read("/api/v1/app/:appId/endpoint", { appId });
  expect(endpoints.data).toHaveLength(3);
  const one = await read("/api/v1/app/:appId/endpoint/:endpointId", {
    appId,
    endpointId: failing.id,
  });
  expect(one.metadata).toEqual({ team: "billing", "odd key": "ü ☃" });
  expect(one.maxAttempts).toBe(1);
  await read("/api/v1/app/:appId/endpoint/:endpointId", { appId, endpointId: quiet.id });
  // HMAC only (no public key), both, Ed25519 only (the public key is the key)
  const hmac = await read("/api/v1/app/:appId/endpoint/:endpointId/secret", {
    appId,
    endpointId: failing.id,
  });
  expect([hmac.key.slice(0, 6), hmac.publicKey]).toEqual(["whsec_", null]);
  const both = await read("/api/v1/app/:appId/endpoint/:endpointId/secret", {
    appId,
    endpointId: quiet.id,
  });
  expect([both.key.slice(0, 6), both.publicKey?.slice(0, 5)]).toEqual(["whsec_", "whpk_"]);
  const ed = await read("/api/v1/app/:appId/endpoint/:endpointId/secret", {
    appId,
    endpointId: edOnly.id,
  });
  expect([ed.key, ed.signatureScheme]).toEqual([ed.publicKey, "v1a"]);
  const shownHeaders = await read("/api/v1/app/:appId/endpoint/:endpointId/headers", {
    appId,
    endpointId: failing.id,
  });
  expect(shownHeaders).toEqual({ headers: { Authorization: "***" }, sensitive: ["Authorization"] });
  await read("/api/v1/health/endpoints", {}, { app_id: appId });
  await read("/api/v1/health/endpoints", {});

  await read("/api/v1/app/:appId/msg", { appId }, { with_content: "true" });
  await read("/api/v1/app/:appId/msg", { appId }, { with_content: "false" });
  const stored = await read("/api/v1/app/:appId/msg/:msgId", { appId, msgId });
  expect(stored.payload).toEqual({ n: 1, nested: { list: [1, "two", null] } });
  await read("/api/v1/event-type", {});
  // a replay counted (a dry run, finished with its total) and one left running
  const since = new Date(Date.now() - 3_600_000).toISOString();
  const counted = await h.call("POST", `${V1}/app/${appId}/endpoint/${quiet.id}/bulk-replay`, {
    since,
    eventTypes: ["order.created"],
    dryRun: true,
  });
  expect(counted.status, JSON.stringify(counted.body)).toBe(202);
  const running = await h.call("POST", `${V1}/app/${appId}/endpoint/${quiet.id}/recover`, {
    since,
  });
  expect(running.status, JSON.stringify(running.body)).toBe(202);
  expect((await read("/api/v1/background-task", {})).data.length).toBeGreaterThanOrEqual(2);
  const task = await read("/api/v1/background-task/:taskId", { taskId: counted.body.id });
  expect(task.data.filters.eventTypes).toEqual(["order.created"]);
  await read("/api/v1/background-task/:taskId", { taskId: running.body.id });

  await read("/api/v1/egress", {});

  expect(mismatches).toEqual([]);
  expect([...compared.keys()].sort()).toEqual(Object.keys(READ_ROUTES).sort());
});
