/**
 * GET /healthz: 200 `{ status: "ok", database: "reachable" }` when the database answers
 * within HEALTH_PING_TIMEOUT_MS; 503 `{ status: "unavailable", database: "unreachable",
 * detail }` with Retry-After otherwise (docs/reliability.md). GET /metrics: Prometheus.
 */
import { timingSafeEqual } from "node:crypto";
import type { FastifyInstance } from "fastify";
import { ping } from "../../db/queries/ping.ts";
import type { Metrics } from "../../ops/metrics.ts";
import type { ApiContext } from "../context.ts";
import { apiError, DATABASE_RETRY_AFTER_S } from "../errors.ts";

/** A probe must answer quickly even when connecting hangs (a failover's unreachable host). */
const HEALTH_PING_TIMEOUT_MS = 3_000;

export function registerHealthRoutes(app: FastifyInstance, { pool }: ApiContext): void {
  app.get("/healthz", { schema: { hide: true } }, async (_request, reply) => {
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        ping(pool),
        new Promise<never>((_, reject) => {
          timer = setTimeout(
            () => reject(new Error(`no answer within ${HEALTH_PING_TIMEOUT_MS} ms`)),
            HEALTH_PING_TIMEOUT_MS,
          );
        }),
      ]);
      return { status: "ok", database: "reachable" };
    } catch (err) {
      reply.code(503).header("retry-after", String(DATABASE_RETRY_AFTER_S));
      return {
        status: "unavailable",
        database: "unreachable",
        detail: `database unreachable: ${(err as Error).message}`,
      };
    } finally {
      clearTimeout(timer);
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
