/**
 * The API's routes: /healthz and /metrics, then /api/v1 behind authentication (bearer keys,
 * or the principal of an in-process call), the per-key rate limit and idempotency keys.
 */
import type { FastifyInstance } from "fastify";
import type { Metrics } from "../ops/metrics.ts";
import type { Authenticate } from "./auth.ts";
import type { ApiContext } from "./context.ts";
import { registerIdempotency } from "./idempotency.ts";
import type { InProcessCalls } from "./in-process.ts";
import { makeKeyRateLimiter } from "./key-rate-limit.ts";
import { registerApiKeyRoutes } from "./routes/api-keys.ts";
import { registerApplicationRoutes } from "./routes/applications.ts";
import { registerAttemptExportRoute } from "./routes/attempt-export.ts";
import { registerAttemptRoutes } from "./routes/attempts.ts";
import { registerBackgroundTaskRoutes } from "./routes/background-tasks.ts";
import { registerDashboardAccessRoute } from "./routes/dashboard-access.ts";
import { registerEgressRoutes } from "./routes/egress.ts";
import { registerEndpointHeaderRoutes } from "./routes/endpoint-headers.ts";
import { registerEndpointHealthRoutes } from "./routes/endpoint-health.ts";
import { registerEndpointStatsRoute } from "./routes/endpoint-stats.ts";
import { registerEndpointTransformationRoutes } from "./routes/endpoint-transformation.ts";
import { registerEndpointRoutes } from "./routes/endpoints.ts";
import { registerEventTypeRoutes } from "./routes/event-types.ts";
import { registerHealthRoutes, registerMetricsRoute } from "./routes/health.ts";
import { registerMaintenanceRoutes } from "./routes/maintenance.ts";
import { registerMessageContentRoute } from "./routes/message-content.ts";
import { registerMessageExportRoute } from "./routes/message-export.ts";
import { registerMessageRoutes } from "./routes/messages.ts";
import { registerOperationRoutes } from "./routes/operations.ts";
import { registerOrderingKeyRoutes } from "./routes/ordering-keys.ts";
import { registerPortalAccessRoutes, registerPortalLogout } from "./routes/portal-access.ts";
import { registerSendExampleRoute } from "./routes/send-example.ts";
import { registerStatsRoutes } from "./routes/stats.ts";

export interface ApiRoutesOptions {
  ctx: ApiContext;
  metrics: Metrics;
  authenticate: Authenticate;
  /** whose passes the auth hook honours (in-process.ts) */
  calls: InProcessCalls;
}

/** Registers every route of the API on `app`. */
export async function registerApiRoutes(
  app: FastifyInstance,
  options: ApiRoutesOptions,
): Promise<void> {
  const { ctx, metrics, authenticate, calls } = options;
  const { config, pool } = ctx;
  registerHealthRoutes(app, ctx);
  registerMetricsRoute(app, metrics, config.metricsToken);
  await app.register(
    async (api) => {
      api.decorateRequest("principal", null as unknown as never);
      const limiter = makeKeyRateLimiter(config.apiRateLimitPerSecond);
      api.addHook("onRequest", async (request) => {
        request.principal = calls.principalOf(request) ?? (await authenticate(request));
        limiter.take(request.principal.keyId);
      });
      registerIdempotency(api, pool, config.idempotencyTtlMs);
      registerApplicationRoutes(api, ctx);
      registerEndpointRoutes(api, ctx);
      registerMessageRoutes(api, ctx);
      registerMessageExportRoute(api, ctx);
      registerAttemptExportRoute(api, ctx);
      registerAttemptRoutes(api, ctx);
      registerEndpointHealthRoutes(api, ctx);
      registerOrderingKeyRoutes(api, ctx);
      registerOperationRoutes(api, ctx);
      registerMaintenanceRoutes(api, ctx);
      registerApiKeyRoutes(api, ctx);
      registerEventTypeRoutes(api, ctx);
      registerPortalAccessRoutes(api, ctx);
      registerSendExampleRoute(api, ctx);
      registerStatsRoutes(api, ctx);
      registerBackgroundTaskRoutes(api, ctx);
      registerEgressRoutes(api, ctx);
      // the svix client's everyday endpoint calls (README.md, Using the svix client)
      registerEndpointHeaderRoutes(api, ctx);
      registerEndpointStatsRoute(api, ctx);
      registerEndpointTransformationRoutes(api, ctx);
      registerDashboardAccessRoute(api, ctx);
      registerMessageContentRoute(api, ctx);
    },
    { prefix: "/api/v1" },
  );
  // a portal link's own token, not an API key, authorizes its logout
  await app.register(async (api) => registerPortalLogout(api, ctx), { prefix: "/api/v1" });
}
