/**
 * GET /healthz: 200 `{ status: "ok", database: "reachable" }` when the database answers
 * within HEALTH_PING_TIMEOUT_MS; 503 `{ status: "unavailable", database: "unreachable",
 * detail }` with Retry-After otherwise (docs/reliability.md). GET /metrics: Prometheus.
 *
 * Svix's health calls, without an API key as in Svix: GET|HEAD /api/v1/health (the svix
 * client's `health.get`) answers 200 `{ database: { status: "Ok" }, queue: { status: "Ok" } }`
 * (the queue is the database too), or 503 with "Error" and Retry-After; GET|HEAD
 * /api/v1/health/ping answers 204 while the process runs.
 */
import { timingSafeEqual } from "node:crypto";
import type { FastifyInstance } from "fastify";
import { ping } from "../../db/queries/ping.ts";
import type { Metrics } from "../../ops/metrics.ts";
import type { ApiContext } from "../context.ts";
import { apiError, DATABASE_RETRY_AFTER_S } from "../errors.ts";

/** A probe must answer quickly even when connecting hangs (a failover's unreachable host). */
const HEALTH_PING_TIMEOUT_MS = 3_000;

/** Null when the database answers within HEALTH_PING_TIMEOUT_MS; why not otherwise. */
async function databaseProblem(pool: ApiContext["pool"]): Promise<string | null> {
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
    return null;
  } catch (err) {
    return (err as Error).message;
  } finally {
    clearTimeout(timer);
  }
}

export function registerHealthRoutes(app: FastifyInstance, { pool }: ApiContext): void {
  app.get("/healthz", { schema: { hide: true } }, async (_request, reply) => {
    const problem = await databaseProblem(pool);
    if (problem === null) return { status: "ok", database: "reachable" };
    reply.code(503).header("retry-after", String(DATABASE_RETRY_AFTER_S));
    return {
      status: "unavailable",
      database: "unreachable",
      detail: `database unreachable: ${problem}`,
    };
  });

  // (Fastify answers HEAD on each GET route)
  app.get(
    "/api/v1/health",
    { schema: { tags: ["health"], summary: "Svix's health check (no API key needed)" } },
    async (_request, reply) => {
      const status = (await databaseProblem(pool)) === null ? "Ok" : "Error";
      if (status === "Error") reply.code(503).header("retry-after", String(DATABASE_RETRY_AFTER_S));
      return { database: { status }, queue: { status } };
    },
  );
  app.get(
    "/api/v1/health/ping",
    { schema: { tags: ["health"], summary: "Answers 204 while the process runs" } },
    async (_request, reply) => reply.code(204).send(),
  );
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
