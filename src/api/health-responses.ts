/**
 * Response schemas of the operations and health routes the dashboard and the portal read
 * (routes/operations.ts, maintenance.ts, endpoint-health.ts); the rules they follow are
 * response-schemas.ts's.
 */
import {
  count,
  nullableCount,
  nullableNumber,
  nullableText,
  pageOf,
  text,
} from "./response-parts.ts";
import type { FromSchema } from "./schema-type.ts";

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
        /** resuming after a backpressure pause: the in-flight room grown back so far */
        resumeRoom: nullableNumber,
        /** the adaptive in-flight limit (docs/adaptive-concurrency.md) */
        concurrency: {
          type: "object",
          additionalProperties: false,
          properties: {
            adaptive: { type: "boolean" },
            current: count,
            max: count,
            reason: {
              type: "string",
              // health/concurrency-limit.ts's ConcurrencyReason
              enum: [
                "starting",
                "growing",
                "at_max",
                "resuming",
                "latency_rising",
                "rate_limited",
                "timeouts",
              ],
            },
            since: nullableText,
          },
          required: ["adaptive", "current", "max", "reason", "since"],
        },
        ratePerSecond: nullableNumber,
        ratePerMinute: nullableNumber,
        ratePerHour: nullableNumber,
      },
      required: [
        "maxInFlight",
        "resumeRoom",
        "concurrency",
        "ratePerSecond",
        "ratePerMinute",
        "ratePerHour",
      ],
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

export type HealthSummaryResponse = FromSchema<typeof healthSummaryResponse>;
export type AlertsResponse = FromSchema<typeof alertsResponse>;
export type DeadLettersResponse = FromSchema<typeof deadLettersResponse>;
export type DeadLetterAnalysisResponse = FromSchema<typeof deadLetterAnalysisResponse>;
export type RequeuePlanResponse = FromSchema<typeof requeuePlanResponse>;
export type EndpointHealthResponse = FromSchema<typeof endpointHealthResponse>;
