/**
 * Endpoint health (docs/delivery.md, "Circuit breaker"):
 *   GET  /app/{appId}/endpoint/{endpointId}/health         one endpoint, latency computed now
 *   POST /app/{appId}/endpoint/{endpointId}/circuit/reset  force the circuit closed
 *   GET  /health/endpoints?state=&slow=&app_id=            every endpoint (stored figures; computed now for one awaiting its first)
 */
import type { FastifyInstance } from "fastify";
import type { HealthConfig } from "../../config.ts";
import {
  circuitHistory,
  type EndpointHealthRow,
  getEndpointHealth,
  listEndpointHealth,
} from "../../db/queries/endpoint-health.ts";
import { notifyWork } from "../../db/queries/work.ts";
import { ADAPTIVE_RULE } from "../../domain/adaptive-concurrency.ts";
import { effective } from "../../domain/endpoint-policy-derived.ts";
import { resetCircuit } from "../../health/circuit-transitions.ts";
import {
  endpointLatency,
  type LatencyStats,
  slowness,
  withFirstFigures,
} from "../../health/latency-stats.ts";
import { ID_PREFIX } from "../../ids.ts";
import type { ApiContext } from "../context.ts";
import { badRequest, notFound } from "../errors.ts";
import { endpointHealthPageResponse, endpointHealthResponse } from "../health-responses.ts";
import { type PageQuery, pageQuerySchema, planPage, toPage } from "../pagination.ts";
import { resolveAppId, resolveEndpointId } from "../resolve.ts";
import { iso } from "../schemas.ts";

/**
 * The endpoint's in-flight limit as the claim applies it (health/concurrency-limit.ts's
 * claimLimitSql) and why it last moved; with nothing learned yet, where it starts.
 */
function concurrencyOut(r: EndpointHealthRow, max: number, adaptive: "on" | "off") {
  const learned = r.concurrency_limit === null ? null : Math.floor(r.concurrency_limit);
  if (adaptive === "off" && r.concurrency_reason !== "resuming")
    return {
      adaptive: false,
      current: max,
      max,
      reason: "at_max",
      since: iso(r.concurrency_since),
    };
  return {
    adaptive: adaptive === "on",
    current: Math.min(
      max,
      // (a broker's starts at maxInFlight: concurrency-limit.ts)
      learned ??
        (adaptive === "on" && r.destination_kind === "http" ? ADAPTIVE_RULE.initialLimit : max),
    ),
    max,
    reason: r.concurrency_reason ?? "starting",
    since: iso(r.concurrency_since),
  };
}

function healthOut(
  r: EndpointHealthRow,
  health: HealthConfig,
  defaults: { maxInFlight: number; redactUrl: (url: string) => string },
  latency: LatencyStats,
  history?: unknown[],
) {
  // the endpoint's policy, each field or its process default (domain/endpoint-policy.ts)
  const policy = {
    failureThreshold: r.failure_threshold,
    cooldownMs: r.base_cooldown_ms,
    maxInFlight: r.max_in_flight,
  };
  const threshold = effective(policy, health, "failureThreshold");
  const { slow, verySlow } = slowness(latency, health);
  const oldest = r.oldest_pending_at;
  const maxInFlight = effective(policy, defaults, "maxInFlight");
  const concurrency = concurrencyOut(
    r,
    maxInFlight,
    r.adaptive_concurrency ?? health.adaptiveConcurrency,
  );
  return {
    endpointId: r.id,
    appId: r.app_id,
    url: defaults.redactUrl(r.url),
    disabled: r.disabled,
    circuit: {
      state: r.circuit_state,
      consecutiveFailures: r.consecutive_failures,
      failureThreshold: threshold,
      effectiveFailureThreshold: verySlow
        ? Math.min(threshold, health.verySlowFailureThreshold)
        : threshold,
      cooldownMs: r.cooldown_ms ?? effective(policy, health, "cooldownMs"),
      baseCooldownMs: effective(policy, health, "cooldownMs"),
      openedAt: iso(r.opened_at),
      openUntil: iso(r.open_until),
      ...(history && { history }),
    },
    latency: { ...latency, windowMs: health.windowMs },
    slow,
    verySlow,
    queue: {
      pending: r.pending,
      inFlight: r.in_flight,
      deadLetter: r.dead_letter,
      oldestPendingAt: iso(oldest),
      oldestPendingAgeMs: oldest ? Math.max(0, Date.now() - oldest.getTime()) : null,
    },
    pausedUntil: iso(r.paused_until),
    lastSuccessAt: iso(r.last_success_at),
    lastFailureAt: iso(r.last_failure_at),
    limits: {
      maxInFlight,
      // resuming after a backpressure pause (docs/delivery.md, Backpressure): the room it has
      // grown back to, while below maxInFlight
      resumeRoom:
        concurrency.reason === "resuming" && concurrency.current < maxInFlight
          ? concurrency.current
          : null,
      concurrency,
      ratePerSecond: r.rate_per_second,
      ratePerMinute: r.rate_per_minute,
      ratePerHour: r.rate_per_hour,
    },
  };
}

export function registerEndpointHealthRoutes(
  app: FastifyInstance,
  { pool, config, redactor }: ApiContext,
): void {
  const defaults = { maxInFlight: config.delivery.maxInFlight, redactUrl: redactor.url };
  type P = { Params: { appId: string; endpointId: string } };
  const params = {
    type: "object",
    properties: {
      appId: { type: "string", maxLength: 256 },
      endpointId: { type: "string", maxLength: 256 },
    },
    required: ["appId", "endpointId"],
  } as const;

  async function one(endpointId: string) {
    const row = await getEndpointHealth(pool, endpointId);
    if (!row) throw notFound("endpoint");
    const latency = await endpointLatency(pool, endpointId, config.health.windowMs);
    const history = (await circuitHistory(pool, endpointId)).map((e) => ({
      at: iso(e.at),
      from: e.from_state,
      to: e.to_state,
      reason: e.reason,
    }));
    return healthOut(row, config.health, defaults, latency, history);
  }

  app.get<P>(
    "/app/:appId/endpoint/:endpointId/health",
    { schema: { tags: ["health"], params, response: { 200: endpointHealthResponse } } },
    async (request) => {
      const appId = await resolveAppId(pool, request.principal, request.params.appId);
      return one(await resolveEndpointId(pool, appId, request.params.endpointId));
    },
  );

  app.post<P>(
    "/app/:appId/endpoint/:endpointId/circuit/reset",
    { schema: { tags: ["health"], params } },
    async (request) => {
      const appId = await resolveAppId(pool, request.principal, request.params.appId);
      const endpointId = await resolveEndpointId(pool, appId, request.params.endpointId);
      await resetCircuit(pool, endpointId);
      // its waiting deliveries are due now: wake the workers instead of waiting for a poll
      await notifyWork(pool);
      return one(endpointId);
    },
  );

  app.get<{ Querystring: PageQuery & { state?: string; slow?: boolean; app_id?: string } }>(
    "/health/endpoints",
    {
      schema: {
        tags: ["health"],
        querystring: {
          type: "object",
          properties: {
            ...pageQuerySchema,
            state: { type: "string", enum: ["closed", "open", "half_open"] },
            slow: { type: "boolean" },
            app_id: { type: "string", maxLength: 256 },
          },
        },
        response: { 200: endpointHealthPageResponse },
      },
    },
    async (request) => {
      const q = request.query;
      const plan = planPage(q, "ascending", ID_PREFIX.endpoint);
      let appId: string | null = null;
      if (q.app_id) appId = await resolveAppId(pool, request.principal, q.app_id);
      else if (request.principal.role === "app") appId = request.principal.appId;
      if (q.slow !== undefined && typeof q.slow !== "boolean")
        throw badRequest("slow must be true or false");
      const rows = await withFirstFigures(
        pool,
        await listEndpointHealth(
          pool,
          { appId, circuitState: q.state ?? null, slow: q.slow ?? null },
          plan.window,
        ),
        config.health.windowMs,
      );
      return toPage(
        rows,
        plan,
        (r) => r.id,
        (r) =>
          healthOut(r, config.health, defaults, {
            p50Ms: r.p50_ms,
            p95Ms: r.p95_ms,
            p99Ms: r.p99_ms,
            samples: r.samples,
            successRate: r.success_rate,
          }),
      );
    },
  );
}
