/**
 * What the OpenAPI document says of each operation whose route does not say it itself: a
 * summary, a description and, for a route without a response schema, the shape of its
 * success answer. docs.ts applies it as the document is built (a route's own schema always
 * wins), so route files stay about validation and handling. test/openapi.test.ts fails on
 * an operation that has neither its own nor an entry here, and on an entry for an operation
 * that no longer exists.
 *
 * The answer shapes here describe what the handlers write (the routes serialize without
 * them); each object is open (`additionalProperties: true`), as a client should read it.
 */
import {
  attemptPageResponse,
  endpointResponse,
  messagePageResponse,
  messageResponse,
} from "./response-schemas.ts";

/** One operation's documentation; keys of OPERATION_DOCS are "METHOD /openapi/path". */
export interface OperationDoc {
  summary?: string;
  description?: string;
  /** success answers by status code (a 204 has no body: `{ type: "null" }`) */
  response?: Record<number, unknown>;
}

const open = (properties: Record<string, unknown>) =>
  ({ type: "object", additionalProperties: true, properties }) as const;
const text = { type: "string" } as const;
const nullableText = { type: ["string", "null"] } as const;
const list = (item: unknown) =>
  ({ type: "object", properties: { data: { type: "array", items: item } } }) as const;
const noContent = { 204: { type: "null", description: "Done; no body." } } as const;

const application = open({
  id: text,
  uid: nullableText,
  name: text,
  throttleRate: { type: ["integer", "null"] },
  rateLimit: { type: ["integer", "null"] },
  metadata: { type: "object", additionalProperties: true },
  egressPool: nullableText,
  createdAt: text,
  updatedAt: text,
});
const applicationPage = {
  type: "object",
  properties: {
    data: { type: "array", items: application },
    iterator: nullableText,
    prevIterator: nullableText,
    done: { type: "boolean" },
  },
} as const;
const eventType = open({
  name: text,
  description: text,
  archived: { type: "boolean" },
  deprecated: { type: "boolean" },
  schemas: { type: ["object", "null"], additionalProperties: true },
  groupName: nullableText,
  featureFlags: { type: ["array", "null"], items: text },
  createdAt: text,
  updatedAt: text,
});
const apiKey = open({
  id: text,
  name: nullableText,
  role: { type: "string", enum: ["admin", "app"] },
  appId: nullableText,
  createdAt: text,
  revokedAt: nullableText,
});
const portalToken = open({
  id: text,
  appId: text,
  capabilities: { type: "array", items: text },
  sessionId: nullableText,
  createdAt: text,
  expiresAt: text,
  revokedAt: nullableText,
});
const attempt = attemptPageResponse.properties.data.items;
const endpointMessage = {
  ...messageResponse,
  additionalProperties: true,
  properties: {
    ...messageResponse.properties,
    status: {
      type: "integer",
      description: "Svix's MessageStatus: 0 success, 1 pending, 2 fail, 3 sending",
    },
    statusText: text,
    nextAttempt: nullableText,
    deliveryStatus: { type: "string", description: "hookrelay's delivery state" },
  },
};
const endpointHealthOpen = open({
  endpointId: text,
  circuit: { type: "object", additionalProperties: true },
});

export const OPERATION_DOCS: Record<string, OperationDoc> = {
  "GET /api/v1/health": {
    description:
      "Svix's health check: `database` and `queue` each `Ok` or `Error`; 503 with Retry-After when the database cannot be reached. Needs no API key.",
    response: {
      200: open({
        database: open({ status: { type: "string", enum: ["Ok", "Error"] } }),
        queue: open({ status: { type: "string", enum: ["Ok", "Error"] } }),
      }),
    },
  },
  "GET /api/v1/health/ping": {
    description: "A liveness probe of the process only (no database read). Needs no API key.",
    response: noContent,
  },
  "GET /api/v1/app": {
    summary: "List applications",
    description:
      "The applications this key may see (an app-scoped key: its own), newest first, a page at a time (`limit`, `iterator`).",
    response: { 200: applicationPage },
  },
  "POST /api/v1/app": {
    summary: "Create an application",
    description:
      "Creates an application (201). With `get_if_exists=true` and a `uid` that is taken, answers the existing one (200) instead of 409. Admin keys only.",
    response: { 201: application, 200: application },
  },
  "GET /api/v1/app/{appId}": {
    summary: "Get an application",
    description: "One application by id or uid.",
    response: { 200: application },
  },
  "PUT /api/v1/app/{appId}": {
    summary: "Replace an application",
    description:
      "Sets every field (left out: its default; the uid is kept). Creates the application (201) when the path's uid names none, as Svix's upsert does.",
    response: { 200: application, 201: application },
  },
  "PATCH /api/v1/app/{appId}": {
    summary: "Update an application",
    description: "Changes the fields the body gives and keeps the rest.",
    response: { 200: application },
  },
  "DELETE /api/v1/app/{appId}": {
    summary: "Delete an application",
    description: "Deletes the application with its endpoints, messages and deliveries.",
    response: noContent,
  },
  "GET /api/v1/app/{appId}/endpoint": {
    summary: "List endpoints",
    description:
      "The application's endpoints, a page at a time; URL tokens and sensitive values masked.",
  },
  "POST /api/v1/app/{appId}/endpoint": {
    summary: "Create an endpoint",
    description:
      "Creates an endpoint with its signing secret (given or generated) and delivery policy; the URL is checked against the SSRF guard.",
    response: { 201: endpointResponse },
  },
  "GET /api/v1/app/{appId}/endpoint/{endpointId}": {
    summary: "Get an endpoint",
    description: "One endpoint by id or uid, with its delivery policy fields.",
  },
  "PUT /api/v1/app/{appId}/endpoint/{endpointId}": {
    summary: "Replace an endpoint",
    description:
      "Sets every field; a policy field left out goes back to the server's default. Creates the endpoint (201) when the path's uid names none.",
    response: { 200: endpointResponse, 201: endpointResponse },
  },
  "PATCH /api/v1/app/{appId}/endpoint/{endpointId}": {
    summary: "Update an endpoint",
    description:
      "Changes the fields the body gives and keeps the rest. Enabling a disabled endpoint sends what it held.",
    response: { 200: endpointResponse },
  },
  "DELETE /api/v1/app/{appId}/endpoint/{endpointId}": {
    summary: "Delete an endpoint",
    description: "Deletes the endpoint and its deliveries.",
    response: noContent,
  },
  "GET /api/v1/app/{appId}/endpoint/{endpointId}/secret": {
    summary: "Get the endpoint's signing secret",
    description:
      "The current signing secret (`whsec_...`, or Ed25519 keys when the endpoint signs with them).",
  },
  "POST /api/v1/app/{appId}/endpoint/{endpointId}/secret/rotate": {
    summary: "Rotate the endpoint's signing secret",
    description:
      "Starts signing with a new secret (given or generated); the old one keeps signing beside it until it expires, so receivers can switch without a gap.",
    response: noContent,
  },
  "POST /api/v1/app/{appId}/msg": {
    summary: "Send a message",
    description:
      "Accepts a message for every endpoint of the app whose filters match (202), committed before the answer. A repeated `eventId` answers the original (200). A W3C `traceparent` header continues the producer's trace (docs/telemetry.md).",
    response: { 202: messageResponse, 200: messageResponse },
  },
  "GET /api/v1/app/{appId}/msg": {
    summary: "List messages",
    description:
      "The application's messages, newest first, filtered by event type, channel, tag and time.",
  },
  "GET /api/v1/app/{appId}/msg/{msgId}": {
    summary: "Get a message",
    description: "One message by id or by the producer's `eventId`.",
  },
  "GET /api/v1/app/{appId}/attempt/msg/{msgId}": {
    summary: "List a message's attempts",
    description:
      "Every attempt made for the message, newest first, with status, latency and error.",
  },
  "GET /api/v1/app/{appId}/attempt/endpoint/{endpointId}": {
    summary: "List an endpoint's attempts",
    description: "The endpoint's attempts, newest first, filtered by status and time.",
  },
  "GET /api/v1/app/{appId}/msg/{msgId}/attempt/{attemptId}": {
    summary: "Get an attempt",
    description:
      "One attempt of the message: the request's URL, the answer, its latency and error.",
    response: { 200: attempt },
  },
  "GET /api/v1/app/{appId}/msg/{msgId}/endpoint": {
    summary: "List a message's deliveries",
    description: "The message's delivery to each endpoint: state, attempts made and the next one.",
  },
  "GET /api/v1/app/{appId}/endpoint/{endpointId}/msg": {
    summary: "List an endpoint's messages",
    description:
      "The messages sent to the endpoint, newest first, each with its delivery's status.",
    response: {
      200: {
        ...messagePageResponse,
        properties: {
          ...messagePageResponse.properties,
          data: { type: "array", items: endpointMessage },
        },
      },
    },
  },
  "POST /api/v1/app/{appId}/msg/{msgId}/endpoint/{endpointId}/resend": {
    summary: "Resend a message to an endpoint",
    description:
      "Queues the message's delivery to the endpoint again, with a fresh attempt budget and the same webhook-id.",
    response: { 202: { type: "object", additionalProperties: false, properties: {} } },
  },
  "GET /api/v1/app/{appId}/endpoint/{endpointId}/health": {
    summary: "Get an endpoint's health",
    description:
      "Circuit state, latency percentiles, failure counts, in-flight and concurrency limits of one endpoint.",
  },
  "POST /api/v1/app/{appId}/endpoint/{endpointId}/circuit/reset": {
    summary: "Close an endpoint's circuit",
    description:
      "Resets the circuit breaker to closed; the endpoint's waiting deliveries are due at once. Answers its health.",
    response: { 200: endpointHealthOpen },
  },
  "GET /api/v1/health/endpoints": {
    summary: "List endpoints' health",
    description: "Every endpoint's health, filtered by circuit state, slowness or application.",
  },
  "GET /api/v1/app/{appId}/endpoint/{endpointId}/ordering-keys/blocked": {
    summary: "List an endpoint's blocked ordering keys",
    description:
      "Ordering keys held back by their head delivery (dead-lettered, or retrying with deliveries behind it).",
  },
  "POST /api/v1/app/{appId}/endpoint/{endpointId}/ordering-keys/blocked/{deliveryId}/retry": {
    summary: "Retry a blocked key's head",
    description: "Sends the key's head delivery again now, with a fresh attempt budget.",
  },
  "POST /api/v1/app/{appId}/endpoint/{endpointId}/ordering-keys/blocked/{deliveryId}/skip": {
    summary: "Skip a blocked key's head",
    description: "Cancels the key's head delivery so the next of the key goes.",
  },
  "GET /api/v1/health/summary": {
    summary: "Get the queue's health summary",
    description:
      "Pending, awaiting retry, in flight, dead letters, the last hour's outcomes and the oldest pending age.",
  },
  "GET /api/v1/alerts": {
    summary: "List open alerts",
    description:
      "Alerts the maintenance runner raised and has not resolved: dead letters growing, oldest pending, slow endpoints, open circuits, gone endpoints.",
  },
  "GET /api/v1/dead-letters": {
    summary: "List dead letters",
    description: "Dead-lettered deliveries, filtered by application, endpoint and time.",
  },
  "GET /api/v1/dead-letters/analysis": {
    summary: "Analyse dead letters",
  },
  "POST /api/v1/dead-letters/requeue": {
    summary: "Requeue dead letters",
    description:
      "Takes one delivery, an endpoint's dead letters, or everything failed since a time back to pending with a fresh attempt budget; the message id is kept.",
    response: { 200: open({ requeued: { type: "integer" } }) },
  },
  "POST /api/v1/deliveries/{deliveryId}/cancel": {
    summary: "Cancel a delivery",
    description: "Cancels a delivery that is pending or awaiting a retry (409 in any other state).",
    response: { 200: open({ deliveryId: text, status: { type: "string", enum: ["canceled"] } }) },
  },
  "POST /api/v1/operations/purge": {
    response: {
      200: open({
        deleted: open({
          attempts: { type: "integer" },
          dead_letters: { type: "integer" },
          messages: { type: "integer" },
        }),
        done: { type: "boolean" },
        droppedPartitions: { type: "array", items: {} },
        busyPartitions: { type: "array", items: { type: "string" } },
      }),
    },
  },
  "POST /api/v1/operations/reencrypt-secrets": {
    response: {
      200: open({
        reencrypted: { type: "integer" },
        after: { type: "integer" },
        done: { type: "boolean" },
      }),
    },
  },
  "GET /api/v1/dead-letters/requeue-plan": {
    description:
      "How many deliveries a requeue with these filters would take back, per endpoint, and the pace each would go at.",
  },
  "POST /api/v1/api-keys": {
    summary: "Create an API key",
    description:
      "Creates an admin key or a key scoped to one application. The key itself is in this answer only; it is stored hashed.",
    response: { 201: { ...apiKey, properties: { ...apiKey.properties, key: text } } },
  },
  "GET /api/v1/api-keys": {
    summary: "List API keys",
    description: "Every key (or one application's), without the keys themselves.",
    response: { 200: list(apiKey) },
  },
  "DELETE /api/v1/api-keys/{keyId}": {
    summary: "Revoke an API key",
    description: "The key stops working at once.",
    response: noContent,
  },
  "GET /api/v1/event-type": {
    summary: "List event types",
    description: "The event types, a page at a time; archived ones only with `include_archived`.",
  },
  "POST /api/v1/event-type": {
    summary: "Create an event type",
    description: "Declares an event type (201), with its JSON schemas if given.",
    response: { 201: eventType },
  },
  "GET /api/v1/event-type/{name}": {
    summary: "Get an event type",
    description: "One event type by name.",
    response: { 200: eventType },
  },
  "PUT /api/v1/event-type/{name}": {
    summary: "Replace an event type",
    description: "Sets every field; creates the event type (201) when it does not exist.",
    response: { 200: eventType, 201: eventType },
  },
  "PATCH /api/v1/event-type/{name}": {
    summary: "Update an event type",
    description: "Changes the fields the body gives and keeps the rest.",
    response: { 200: eventType },
  },
  "DELETE /api/v1/event-type/{name}": {
    summary: "Archive or delete an event type",
    description: "Archives the event type; with `expunge=true` deletes it.",
    response: noContent,
  },
  "POST /api/v1/auth/app-portal-access/{appId}": {
    description:
      "A link that signs its holder into the application's portal for a while (Svix's AppPortalAccessOut: url and token).",
  },
  "GET /api/v1/auth/app/{appId}/portal-access": {
    description: "The application's portal links that have not expired, with their capabilities.",
    response: { 200: list(portalToken) },
  },
  "POST /api/v1/auth/app/{appId}/portal-access/{tokenId}/revoke": {
    description: "The link and the sessions it opened stop working at once.",
    response: noContent,
  },
  "POST /api/v1/auth/app/{appId}/expire-all": {
    description:
      "Every portal link of the application stops working (optionally after a grace period, Svix's expiry).",
    response: noContent,
  },
  "POST /api/v1/app/{appId}/endpoint/{endpointId}/send-example": {
    description:
      "Queues an example message of the event type (its schema's example, or an empty object) for this endpoint only (202).",
    response: { 202: messageResponse },
  },
  "GET /api/v1/stats/buckets": {
    description:
      "Per time bucket of the chosen range: attempts by outcome and latency percentiles, for an endpoint or an application.",
  },
  "POST /api/v1/app/{appId}/endpoint/{endpointId}/recover": {
    summary: "Recover an endpoint's failed deliveries",
    description:
      "Svix's recover: sends the endpoint's failed and dead-lettered deliveries of messages created in the window again, as a paced background task (202 with the task).",
  },
  "POST /api/v1/app/{appId}/endpoint/{endpointId}/replay-missing": {
    summary: "Replay the messages an endpoint missed",
    description:
      "Svix's replay-missing: sends the messages of the window that match the endpoint and it never got (no delivery, or canceled or skipped), as a paced background task.",
  },
  "POST /api/v1/app/{appId}/endpoint/{endpointId}/bulk-replay": {
    summary: "Replay an endpoint's deliveries",
    description:
      "Sends the endpoint's deliveries of the window that match the filters again, keeping each message's webhook-id, as a paced background task; `dryRun` only counts.",
  },
  "GET /api/v1/background-task": {
    summary: "List background tasks",
    description:
      "Recover, replay-missing and bulk-replay tasks, newest first, with their progress.",
  },
  "GET /api/v1/background-task/{taskId}": {
    summary: "Get a background task",
    description: "One task: its status and progress (`total`, `done`).",
  },
  "POST /api/v1/background-task/{taskId}/cancel": {
    summary: "Cancel a background task",
    description:
      "Cancels a running task between two of its batches; what it already queued stays queued.",
  },
  "GET /api/v1/egress": {
    description:
      "The egress pools the server was given (proxies or source addresses) and the IP addresses receivers see from each.",
  },
  "GET /api/v1/app/{appId}/endpoint/{endpointId}/headers": {
    description:
      "The headers sent with every delivery to the endpoint; values of sensitive headers are masked.",
  },
  "PUT /api/v1/app/{appId}/endpoint/{endpointId}/headers": {
    description: "Replaces the endpoint's custom headers with the body's.",
    response: noContent,
  },
  "PATCH /api/v1/app/{appId}/endpoint/{endpointId}/headers": {
    description:
      "Sets the body's headers and keeps the others; a null value or `deleteHeaders` removes one.",
    response: noContent,
  },
  "GET /api/v1/app/{appId}/endpoint/{endpointId}/stats": {
    description:
      "How many of the endpoint's deliveries are in each state (success, pending, sending, fail).",
  },
  "GET /api/v1/app/{appId}/endpoint/{endpointId}/transformation": {
    description:
      "Svix's transformations are not part of hookrelay; the route exists so a svix client gets a clear 400 not_supported.",
  },
  "PATCH /api/v1/app/{appId}/endpoint/{endpointId}/transformation": {
    description:
      "Svix's transformations are not part of hookrelay; the route exists so a svix client gets a clear 400 not_supported.",
  },
  "POST /api/v1/auth/dashboard-access/{appId}": {
    description:
      "The same portal link as app-portal-access, answered as Svix's older DashboardAccessOut (url and token).",
  },
  "DELETE /api/v1/app/{appId}/msg/{msgId}/content": {
    description:
      'Deletes the payload; the message, its deliveries and attempts stay, and reads show Svix\'s `{"expired": true}`.',
    response: noContent,
  },
  "POST /api/v1/auth/logout": {
    description: "The portal link given as the bearer token, and its sessions, stop working.",
    response: noContent,
  },
};

/** The OpenAPI path of a Fastify route URL (`/app/:appId` → `/app/{appId}`). */
export const openApiPath = (url: string): string => url.replace(/:([A-Za-z0-9_]+)/g, "{$1}");
