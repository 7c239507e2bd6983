/**
 * Response schemas of the routes the dashboard and the portal read (in-process.ts), in the
 * routes' own JSON-schema style. Fastify serializes those answers with them
 * (fast-json-stringify), which writes only the properties a schema names: an object whose
 * shape is open (rows spread from a query, nested reports) says `additionalProperties: true`
 * so that nothing it carries today is dropped. Properties are listed in the order the
 * handlers write them, each one they always write required (fast-json-stringify writes the
 * required ones first), so an answer is the same text as before, byte for byte
 * (test/response-schemas.test.ts compares).
 */
import { egressResponseProperties } from "./egress-input.ts";
import { oauth2ResponseProperties } from "./oauth2-input.ts";
import {
  anyJson,
  count,
  nameList,
  nullableCount,
  nullableText,
  pageOf,
  text,
} from "./response-parts.ts";

import type { FromSchema } from "./schema-type.ts";

/** An attempt as the API shows it (routes/attempts.ts). */
const attempt = {
  type: "object",
  additionalProperties: true,
  properties: {
    id: text,
    msgId: text,
    endpointId: text,
    url: text,
    response: text,
    responseStatusCode: count,
    responseDurationMs: { type: "number" },
    status: count,
    statusText: text,
    triggerType: count,
    timestamp: nullableText,
    attemptNumber: count,
    errorKind: nullableText,
    error: nullableText,
    detail: { type: ["object", "null"], additionalProperties: true },
  },
  required: [
    "id",
    "msgId",
    "endpointId",
    "url",
    "response",
    "responseStatusCode",
    "responseDurationMs",
    "status",
    "statusText",
    "triggerType",
    "timestamp",
    "attemptNumber",
    "errorKind",
    "error",
    "detail",
  ],
} as const;

/** GET /app/{app}/attempt/endpoint/{endpoint} and /app/{app}/attempt/msg/{msg}. */
export const attemptPageResponse = pageOf(attempt);

/** GET /app/{app}/msg/{msg}/endpoint: the message's delivery to each endpoint. */
export const messageDeliveriesResponse = pageOf({
  type: "object",
  additionalProperties: true,
  properties: {
    id: text,
    uid: nullableText,
    url: text,
    description: text,
    disabled: { type: "boolean" },
    eventTypes: { type: ["array", "null"], items: text },
    channels: { type: ["array", "null"], items: text },
    version: count,
    createdAt: text,
    updatedAt: text,
    status: count,
    statusText: text,
    nextAttempt: nullableText,
    deliveryStatus: text,
    attempts: count,
    lastStatusCode: nullableCount,
    lastErrorKind: nullableText,
    lastError: nullableText,
    deliveredAt: nullableText,
  },
  required: [
    "id",
    "uid",
    "url",
    "description",
    "disabled",
    "eventTypes",
    "channels",
    "version",
    "createdAt",
    "updatedAt",
    "status",
    "statusText",
    "nextAttempt",
    "deliveryStatus",
    "attempts",
    "lastStatusCode",
    "lastErrorKind",
    "lastError",
    "deliveredAt",
  ],
} as const);

/**
 * An endpoint as the API shows it (routes/endpoints.ts): the fields it opens with, in their
 * order; the delivery policy, postback and later fields follow as they are (open shape).
 */
export const endpointResponse = {
  type: "object",
  additionalProperties: true,
  properties: {
    id: text,
    uid: nullableText,
    url: text,
    destinationKind: { type: "string", enum: ["http", "amqp", "nats"] },
    description: text,
    version: count,
    eventTypes: { type: ["array", "null"], items: text },
    filterTypes: { type: ["array", "null"], items: text },
    channels: { type: ["array", "null"], items: text },
    disabled: { type: "boolean" },
    disabledReason: nullableText,
    metadata: { type: "object", additionalProperties: true },
    // egress (docs/egress.md): secrets answered as ***
    ...egressResponseProperties,
    // OAuth2 client credentials (docs/oauth2.md): the secret answered as ***
    ...oauth2ResponseProperties,
  },
  required: [
    "id",
    "uid",
    "url",
    "destinationKind",
    "description",
    "version",
    "eventTypes",
    "filterTypes",
    "channels",
    "disabled",
    "disabledReason",
    "metadata",
  ],
} as const;

/**
 * GET /app/{app}/endpoint/{endpoint}/secret (endpoint-signing.ts, secretOut): the HMAC
 * secret, or the Ed25519 public key when there is none, and the public key if any.
 */
export const endpointSecretResponse = {
  type: "object",
  properties: { key: text, publicKey: nullableText, signatureScheme: text },
  required: ["key", "publicKey", "signatureScheme"],
} as const;

/**
 * GET /app/{app}/endpoint/{endpoint}/headers (routes/endpoint-headers.ts): Svix's
 * EndpointHeadersOut, the values of sensitive headers masked and their names listed.
 */
export const endpointHeadersResponse = {
  type: "object",
  properties: {
    headers: { type: "object", additionalProperties: text },
    sensitive: { type: "array", items: text },
  },
  required: ["headers", "sensitive"],
} as const;

/** GET /app/{app}/endpoint/{endpoint}/stats (routes/endpoint-stats.ts): Svix's EndpointStats. */
export const endpointStatsResponse = {
  type: "object",
  properties: { success: count, pending: count, sending: count, fail: count, canceled: count },
  required: ["success", "pending", "sending", "fail", "canceled"],
} as const;

/** GET /app/{app}/endpoint: a page of endpoints. */
export const endpointPageResponse = pageOf(endpointResponse);

/**
 * A message as the API shows it (routes/messages.ts). Its routes send text they wrote
 * themselves (the payload embedded byte for byte, raw-json.ts), which Fastify passes on
 * as it is: the schema documents and types the answer, and serializes nothing.
 */
export const messageResponse = {
  type: "object",
  properties: {
    id: text,
    eventType: text,
    eventId: nullableText,
    channels: nameList,
    tags: nameList,
    orderingKey: nullableText,
    timestamp: text,
    payload: anyJson,
    /** the list's with_status=true only: how many of its deliveries are in each state */
    deliveryStatusCounts: { type: "object", additionalProperties: { type: "integer" } },
  },
  required: ["id", "eventType", "eventId", "channels", "tags", "timestamp", "payload"],
} as const;

/** GET /app/{app}/msg: a page of messages (sent as text, like messageResponse). */
export const messagePageResponse = pageOf(messageResponse);

/** GET /event-type: a page of the catalogue (sent as text: the schemas are embedded verbatim). */
export const eventTypePageResponse = pageOf({
  type: "object",
  properties: {
    name: text,
    description: text,
    archived: { type: "boolean" },
    deprecated: { type: "boolean" },
    schemas: anyJson,
    groupName: nullableText,
    featureFlags: nameList,
    createdAt: text,
    updatedAt: text,
  },
  required: [
    "name",
    "description",
    "archived",
    "deprecated",
    "schemas",
    "groupName",
    "featureFlags",
    "createdAt",
    "updatedAt",
  ],
} as const);

export type AttemptPageResponse = FromSchema<typeof attemptPageResponse>;
export type MessageDeliveriesResponse = FromSchema<typeof messageDeliveriesResponse>;
export type EndpointResponse = FromSchema<typeof endpointResponse>;
