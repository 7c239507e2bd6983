/**
 * Endpoint health (SPEC §4):
 *   GET  /app/{appId}/endpoint/{endpointId}/health         one endpoint, latency computed now
 *   POST /app/{appId}/endpoint/{endpointId}/circuit/reset  force the circuit closed
 *   GET  /health/endpoints?state=&slow=&app_id=            every endpoint (stored figures)
 */
import type { FastifyInstance } from "fastify";
import type { HealthConfig } from "../../config.ts";
import { type Pool, withTransaction } from "../../db/pool.ts";
import { badRequest } from "../../errors.ts";
import { endpointLatency, type LatencyStats, slowness } from "../../health/latency-stats.ts";
import { ID_PREFIX } from "../../ids.ts";
import { waitingSinceSql } from "../../queue/delivery-states.ts";
import { WORK_CHANNEL } from "../../queue/work-channel.ts";
import { type PageQuery, pageQuerySchema, planPage, toPage } from "../pagination.ts";
import { resolveAppId, resolveEndpointId } from "../resolve.ts";
import { iso } from "../schemas.ts";
import type { ApiContext } from "../server.ts";

const HEALTH_SELECT = `
  select e.id, e.app_id, e.url, e.disabled, e.failure_threshold, e.cooldown_ms as base_cooldown_ms,
         e.max_in_flight, coalesce(e.rate_per_second, e.throttle_rate) as rate_per_second,
         e.rate_per_minute, e.rate_per_hour,
         h.circuit_state, h.consecutive_failures, h.cooldown_ms, h.opened_at, h.open_until,
         h.in_flight, h.paused_until, h.last_success_at, h.last_failure_at,
         h.p50_ms, h.p95_ms, h.p99_ms, h.samples, h.success_rate, h.slow, h.very_slow, h.stats_at,
         q.pending, q.oldest_pending_at, dl.dead_letter
  from endpoints e
  join endpoint_health h on h.endpoint_id = e.id
  cross join lateral (
    select count(*) filter (where d.status in ('pending', 'failed'))::int as pending,
           min(${waitingSinceSql("d")}) as oldest_pending_at
    from deliveries d
    where d.endpoint_id = e.id and d.queued
  ) q
  cross join lateral (
    select count(*)::int as dead_letter from deliveries d
    where d.endpoint_id = e.id and d.dead_lettered
  ) dl`;

// biome-ignore lint/suspicious/noExplicitAny: a row of HEALTH_SELECT
type HealthRow = Record<string, any>;

function healthOut(
  r: HealthRow,
  health: HealthConfig,
  defaults: { maxInFlight: number; redactUrl: (url: string) => string },
  latency: LatencyStats,
  history?: unknown[],
) {
  const threshold = r.failure_threshold ?? health.failureThreshold;
  const { slow, verySlow } = slowness(latency, health);
  const oldest: Date | null = r.oldest_pending_at;
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
      cooldownMs: r.cooldown_ms ?? r.base_cooldown_ms ?? health.cooldownMs,
      baseCooldownMs: r.base_cooldown_ms ?? health.cooldownMs,
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
      maxInFlight: r.max_in_flight ?? defaults.maxInFlight,
      ratePerSecond: r.rate_per_second,
      ratePerMinute: r.rate_per_minute,
      ratePerHour: r.rate_per_hour,
    },
  };
}

async function circuitHistory(db: Pool, endpointId: string) {
  const { rows } = await db.query(
    `select at, from_state, to_state, reason from circuit_events
     where endpoint_id = $1::text order by id desc limit 50`,
    [endpointId],
  );
  return rows.map((r) => ({ at: iso(r.at), from: r.from_state, to: r.to_state, reason: r.reason }));
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
    const { rows } = await pool.query(`${HEALTH_SELECT} where e.id = $1::text`, [endpointId]);
    const latency = await endpointLatency(pool, endpointId, config.health.windowMs);
    return healthOut(
      rows[0],
      config.health,
      defaults,
      latency,
      await circuitHistory(pool, endpointId),
    );
  }

  app.get<P>(
    "/app/:appId/endpoint/:endpointId/health",
    { schema: { tags: ["health"], params } },
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
      await withTransaction(pool, async (client) => {
        const { rows } = await client.query(
          "select circuit_state from endpoint_health where endpoint_id = $1::text for update",
          [endpointId],
        );
        await client.query(
          `update endpoint_health
         set circuit_state = 'closed', consecutive_failures = 0, cooldown_ms = null, opened_at = null,
             open_until = null, probe_delivery_id = null, probe_until = null, paused_until = null
         where endpoint_id = $1::text`,
          [endpointId],
        );
        await client.query(
          `insert into circuit_events (endpoint_id, from_state, to_state, reason)
         values ($1::text, $2::text, 'closed', 'reset by operator')`,
          [endpointId, rows[0]?.circuit_state ?? "closed"],
        );
        await client.query(`select pg_notify('${WORK_CHANNEL}', '')`);
      });
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
      const { rows } = await pool.query(
        `${HEALTH_SELECT}
         where ($1::text is null or e.id ${plan.op} $1::text)
           and ($3::text is null or e.app_id = $3::text)
           and ($4::text is null or h.circuit_state = $4::text)
           and ($5::boolean is null or h.slow = $5::boolean)
         order by e.id ${plan.direction} limit $2::integer`,
        [plan.cursor, plan.limit + 1, appId, q.state ?? null, q.slow ?? null],
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
