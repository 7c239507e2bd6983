/**
 * GET /stats/buckets?endpoint_id=&app_id=&hours=&bucket_minutes= (docs/dashboard.md,
 * "Chart data"): attempts per time bucket by outcome and status class, and latency
 * p50/p95/p99 per bucket, for one endpoint, one app or (admin) everything, over the last
 * `hours` (at most the latency window). An app key is limited to its app.
 */
import type { FastifyInstance } from "fastify";
import { chartBuckets } from "../../ops/chart-rollup.ts";
import type { ApiContext } from "../context.ts";
import { resolveAnyEndpointId, resolveAppId } from "../resolve.ts";
import { iso } from "../schemas.ts";

const str = { type: "string", minLength: 1, maxLength: 256 } as const;
const count = { type: "integer", minimum: 0 } as const;
const msOrNull = { type: ["number", "null"] } as const;

const bucketSchema = {
  type: "object",
  properties: {
    t: { type: "string", format: "date-time", description: "the bucket's start" },
    attempts: count,
    success: count,
    failure: count,
    s2xx: count,
    s3xx: count,
    s4xx: count,
    s5xx: count,
    error: { ...count, description: "attempts without an HTTP response" },
    avgMs: msOrNull,
    p50Ms: msOrNull,
    p95Ms: msOrNull,
    p99Ms: msOrNull,
  },
} as const;

export function registerStatsRoutes(app: FastifyInstance, { pool, config }: ApiContext): void {
  const maxHours = Math.max(1, Math.floor(config.health.windowMs / 3_600_000));
  app.get<{
    Querystring: { endpoint_id?: string; app_id?: string; hours?: number; bucket_minutes?: number };
  }>(
    "/stats/buckets",
    {
      schema: {
        tags: ["health"],
        summary: "Attempts and latency percentiles per time bucket (the dashboard's charts)",
        querystring: {
          type: "object",
          properties: {
            endpoint_id: str,
            app_id: str,
            hours: { type: "integer", minimum: 1, maximum: maxHours, default: maxHours },
            bucket_minutes: { type: "integer", minimum: 1, maximum: 60, default: 5 },
          },
        },
        response: {
          200: {
            type: "object",
            properties: {
              endpointId: { type: ["string", "null"] },
              appId: { type: ["string", "null"] },
              since: { type: "string", format: "date-time" },
              until: { type: "string", format: "date-time" },
              bucketSeconds: { type: "integer" },
              data: { type: "array", items: bucketSchema },
            },
          },
        },
      },
    },
    async (request) => {
      const q = request.query;
      const { principal } = request;
      const endpointId = q.endpoint_id
        ? await resolveAnyEndpointId(pool, principal, q.endpoint_id)
        : null;
      let appId = principal.role === "app" ? principal.appId : null;
      if (q.app_id) appId = await resolveAppId(pool, principal, q.app_id);
      const bucketMs = (q.bucket_minutes ?? 5) * 60_000;
      const until = new Date();
      // buckets start on whole multiples of their length (stable across reloads)
      const since = new Date(
        Math.floor((until.getTime() - (q.hours ?? maxHours) * 3_600_000) / bucketMs) * bucketMs,
      );
      const data = await chartBuckets(
        pool,
        { endpointId, appId },
        { since, until, bucketSeconds: bucketMs / 1000 },
      );
      return {
        endpointId,
        appId: endpointId ? null : appId,
        since: iso(since),
        until: iso(until),
        bucketSeconds: bucketMs / 1000,
        data: data.map((b) => ({ ...b, t: iso(b.t) })),
      };
    },
  );
}
