/** GET /healthz: 200 when the database answers, 503 otherwise. GET /metrics: Prometheus. */
import { timingSafeEqual } from "node:crypto";
import type { FastifyInstance } from "fastify";
import { ping } from "../../db/queries/ping.ts";
import type { Metrics } from "../../ops/metrics.ts";
import type { ApiContext } from "../context.ts";
import { apiError } from "../errors.ts";

export function registerHealthRoutes(app: FastifyInstance, { pool }: ApiContext): void {
  app.get("/healthz", { schema: { hide: true } }, async (_request, reply) => {
    try {
      await ping(pool);
      return { status: "ok" };
    } catch (err) {
      reply.code(503);
      return { status: "unavailable", detail: `database unreachable: ${(err as Error).message}` };
    }
  });
}

/** Prometheus text format; with a token configured, only `Authorization: Bearer <token>`. */
export function registerMetricsRoute(
  app: FastifyInstance,
  metrics: Metrics,
  token: string | undefined,
): void {
  const expected = token ? Buffer.from(`Bearer ${token}`) : null;
  app.get("/metrics", { schema: { hide: true } }, async (request, reply) => {
    if (expected) {
      const got = Buffer.from(request.headers.authorization ?? "");
      if (got.length !== expected.length || !timingSafeEqual(got, expected)) {
        throw apiError(
          "unauthorized",
          "metrics require the metrics token (Authorization: Bearer <token>)",
        );
      }
    }
    reply.type(metrics.registry.contentType);
    return metrics.render();
  });
}
