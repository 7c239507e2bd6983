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
import type { FromSchema } from "./schema-type.ts";

const text = { type: "string" } as const;
const nullableText = { type: ["string", "null"] } as const;
const count = { type: "integer" } as const;
const nullableCount = { type: ["integer", "null"] } as const;
const nullableNumber = { type: ["number", "null"] } as const;

/** A listing page (pagination.ts's Page) of `item`. */
function pageOf<const I>(item: I) {
  return {
    type: "object",
    properties: {
      data: { type: "array", items: item },
      iterator: nullableText,
      prevIterator: nullableText,
      done: { type: "boolean" },
    },
    required: ["data", "iterator", "prevIterator", "done"],
  } as const;
}

/** GET /health/summary (ops/health-summary.ts). */
export const healthSummaryResponse = {
  type: "object",
  properties: {
    pending: count,
    awaitingRetry: count,
    inFlight: count,
    deadLetter: count,
    deliveredLastHour: count,
    failedLastHour: count,
    oldestPending: {
      type: ["object", "null"],
      properties: { at: text, ageMs: { type: "number" } },
      required: ["at", "ageMs"],
    },
    avgDeliveryMsLastHour: nullableNumber,
  },
  required: [
    "pending",
    "awaitingRetry",
    "inFlight",
    "deadLetter",
    "deliveredLastHour",
    "failedLastHour",
    "oldestPending",
    "avgDeliveryMsLastHour",
  ],
} as const;

/** GET /alerts (ops/alerts.ts). */
export const alertsResponse = {
  type: "object",
  properties: {
    data: {
      type: "array",
      items: {
        type: "object",
        additionalProperties: true,
        properties: {
          kind: {
            type: "string",
            enum: [
              "dead_letters_growing",
              "oldest_pending",
              "endpoint_slow",
              "circuit_open",
              "endpoint_gone",
            ],
          },
          severity: { type: "string", enum: ["warning", "critical"] },
          subject: {
            type: "object",
            additionalProperties: true,
            properties: {
              type: { type: "string", enum: ["endpoint", "queue"] },
              id: text,
              appId: nullableText,
            },
            required: ["type", "id", "appId"],
          },
          since: text,
          message: text,
        },
        required: ["kind", "severity", "subject", "since", "message"],
      },
    },
  },
  required: ["data"],
} as const;

/** GET /dead-letters: a page of dead deliveries (ops/dead-letters.ts). */
export const deadLettersResponse = pageOf({
  type: "object",
  additionalProperties: true,
  properties: {
    deliveryId: text,
    messageId: text,
    endpointId: text,
    appId: text,
    eventType: text,
    url: text,
    attempts: count,
    statusCode: nullableCount,
    errorKind: nullableText,
    error: nullableText,
    deadAt: text,
  },
  required: [
    "deliveryId",
    "messageId",
    "endpointId",
    "appId",
    "eventType",
    "url",
    "attempts",
    "statusCode",
    "errorKind",
    "error",
    "deadAt",
  ],
} as const);

/** GET /dead-letters/analysis: one row per endpoint, most dead first (ops/dead-letters.ts). */
export const deadLetterAnalysisResponse = {
  type: "object",
  properties: {
    endpointTotal: count,
    iterator: nullableText,
    done: { type: "boolean" },
    data: {
      type: "array",
      items: {
        type: "object",
        additionalProperties: true,
        properties: {
          endpointId: text,
          appId: text,
          url: text,
          deadCount: count,
          mostCommonError: nullableText,
          mostCommonStatusCode: nullableCount,
          firstDeadAt: text,
          lastDeadAt: text,
          averageAttempts: { type: "number" },
          pattern: text,
          suggestedAction: text,
        },
        required: [
          "endpointId",
          "appId",
          "url",
          "deadCount",
          "mostCommonError",
          "mostCommonStatusCode",
          "firstDeadAt",
          "lastDeadAt",
          "averageAttempts",
          "pattern",
          "suggestedAction",
        ],
      },
    },
  },
  required: ["endpointTotal", "iterator", "done", "data"],
} as const;

/** GET /dead-letters/requeue-plan (ops/dead-letters.ts). */
export const requeuePlanResponse = {
  type: "object",
  properties: {
    total: count,
    endpoints: {
      type: "array",
      items: {
        type: "object",
        additionalProperties: true,
        properties: { endpointId: text, deliveries: count, perSecond: nullableNumber },
        required: ["endpointId", "deliveries", "perSecond"],
      },
    },
  },
  required: ["total", "endpoints"],
} as const;

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
 * GET /app/{app}/endpoint/{endpoint}/health (routes/endpoint-health.ts), and each row of
 * GET /health/endpoints; the circuit's history is the single endpoint's.
 */
export const endpointHealthResponse = {
  type: "object",
  additionalProperties: true,
  properties: {
    endpointId: text,
    appId: text,
    url: text,
    disabled: { type: "boolean" },
    circuit: {
      type: "object",
      additionalProperties: true,
      properties: {
        state: text,
        consecutiveFailures: count,
        failureThreshold: count,
        effectiveFailureThreshold: count,
        cooldownMs: { type: "number" },
        baseCooldownMs: { type: "number" },
        openedAt: nullableText,
        openUntil: nullableText,
        history: {
          type: "array",
          items: {
            type: "object",
            additionalProperties: true,
            properties: { at: nullableText, from: text, to: text, reason: text },
            required: ["at", "from", "to", "reason"],
          },
        },
      },
      required: [
        "state",
        "consecutiveFailures",
        "failureThreshold",
        "effectiveFailureThreshold",
        "cooldownMs",
        "baseCooldownMs",
        "openedAt",
        "openUntil",
      ],
    },
    latency: {
      type: "object",
      additionalProperties: true,
      properties: {
        p50Ms: nullableNumber,
        p95Ms: nullableNumber,
        p99Ms: nullableNumber,
        samples: count,
        successRate: nullableNumber,
        windowMs: { type: "number" },
      },
      required: ["p50Ms", "p95Ms", "p99Ms", "samples", "successRate", "windowMs"],
    },
    slow: { type: "boolean" },
    verySlow: { type: "boolean" },
    queue: {
      type: "object",
      additionalProperties: true,
      properties: {
        pending: count,
        inFlight: count,
        deadLetter: count,
        oldestPendingAt: nullableText,
        oldestPendingAgeMs: nullableNumber,
      },
      required: ["pending", "inFlight", "deadLetter", "oldestPendingAt", "oldestPendingAgeMs"],
    },
    pausedUntil: nullableText,
    lastSuccessAt: nullableText,
    lastFailureAt: nullableText,
    limits: {
      type: "object",
      additionalProperties: true,
      properties: {
        maxInFlight: count,
        ratePerSecond: nullableNumber,
        ratePerMinute: nullableNumber,
        ratePerHour: nullableNumber,
      },
      required: ["maxInFlight", "ratePerSecond", "ratePerMinute", "ratePerHour"],
    },
  },
  required: [
    "endpointId",
    "appId",
    "url",
    "disabled",
    "circuit",
    "latency",
    "slow",
    "verySlow",
    "queue",
    "pausedUntil",
    "lastSuccessAt",
    "lastFailureAt",
    "limits",
  ],
} as const;

/** GET /health/endpoints: a page of endpoints' health. */
export const endpointHealthPageResponse = pageOf(endpointHealthResponse);

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
    description: text,
    version: count,
    eventTypes: { type: ["array", "null"], items: text },
    filterTypes: { type: ["array", "null"], items: text },
    channels: { type: ["array", "null"], items: text },
    disabled: { type: "boolean" },
    disabledReason: nullableText,
    metadata: { type: "object", additionalProperties: true },
  },
  required: [
    "id",
    "uid",
    "url",
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

/** GET /app/{app}/endpoint: a page of endpoints. */
export const endpointPageResponse = pageOf(endpointResponse);

const nameList = { type: ["array", "null"], items: text } as const;
/** Any JSON: a payload or schemas embedded verbatim (raw-json.ts). */
const anyJson = {} as const;

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
    timestamp: text,
    payload: anyJson,
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

export type HealthSummaryResponse = FromSchema<typeof healthSummaryResponse>;
export type AlertsResponse = FromSchema<typeof alertsResponse>;
export type DeadLettersResponse = FromSchema<typeof deadLettersResponse>;
export type DeadLetterAnalysisResponse = FromSchema<typeof deadLetterAnalysisResponse>;
export type RequeuePlanResponse = FromSchema<typeof requeuePlanResponse>;
export type AttemptPageResponse = FromSchema<typeof attemptPageResponse>;
export type MessageDeliveriesResponse = FromSchema<typeof messageDeliveriesResponse>;
export type EndpointHealthResponse = FromSchema<typeof endpointHealthResponse>;
export type EndpointResponse = FromSchema<typeof endpointResponse>;
