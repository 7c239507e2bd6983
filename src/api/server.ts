/**
 * Builds the HTTP API (no side effects: nothing listens until the caller says so, and tests
 * use `app.inject()`). Svix-shaped management API under /api/v1, plus /healthz and /docs.
 * It builds none of its parts: the caller hands them over ready-made and owns their
 * lifecycles. The dashboard and the portal are added beside it by src/http-app.ts.
 */
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from "fastify";
import type { Logger } from "../logger.ts";
import type { Metrics } from "../ops/metrics.ts";
import { makeDisabledTracing } from "../ops/tracing.ts";
import { registerApiRoutes } from "./api-routes.ts";
import type { Authenticate } from "./auth.ts";
import type { ApiContext } from "./context.ts";
import { registerDocs } from "./docs.ts";
import { frameworkErrors, makeErrorHandler, notFound } from "./error-handler.ts";
import { type InProcessCalls, makeInProcessCalls } from "./in-process.ts";
import { registerJsonBodyParser } from "./json-body-parser.ts";
import { registerRequestGuards } from "./request-guards.ts";
import { makeValidatorCompiler } from "./validator-compiler.ts";

export interface ApiOptions extends ApiContext {
  logger: Logger;
  /** served at /metrics */
  metrics: Metrics;
  /** Who a request comes from: makeAuthenticator's bearer keys. */
  authenticate: Authenticate;
  /** serve the OpenAPI document and UI at /docs (default true; tests may skip them) */
  docs?: boolean;
  /**
   * The in-process calls whose principals the API takes (the UIs' pages make them,
   * in-process.ts); default: a set of its own, which nobody else calls through.
   */
  calls?: InProcessCalls;
}

export async function buildApi(options: ApiOptions): Promise<FastifyInstance> {
  const app = Fastify({
    // Per-request logging off (at least warn): at thousands of requests a second it is noise.
    loggerInstance: options.logger.child(
      { component: "api" },
      { level: options.logger.levelVal > 40 ? options.logger.level : "warn" },
    ) as FastifyBaseLogger,
    frameworkErrors,
    bodyLimit: options.config.bodyLimitBytes,
    // Ids and iterators are short; anything longer is junk.
    routerOptions: { maxParamLength: 256 },
    trustProxy: false,
  });
  app.setValidatorCompiler(makeValidatorCompiler());
  const bodies = registerJsonBodyParser(app);
  registerRequestGuards(app);
  app.setErrorHandler(
    makeErrorHandler({
      abortLog: options.logger.child({ component: "api" }),
      hadEmptyBody: bodies.wasEmpty,
    }),
  );
  app.setNotFoundHandler(notFound);
  if (options.docs !== false) await registerDocs(app);
  await registerApiRoutes(app, {
    ctx: {
      ...apiContext(options),
      tracing: options.tracing ?? makeDisabledTracing(options.metrics.tracing),
    },
    metrics: options.metrics,
    authenticate: options.authenticate,
    calls: options.calls ?? makeInProcessCalls(() => app),
  });
  return app;
}

/** The parts the route files take (api/context.ts), and nothing else of `options`. */
export function apiContext(options: ApiContext): ApiContext {
  return {
    pool: options.pool,
    config: options.config,
    ssrfGuard: options.ssrfGuard,
    secretBox: options.secretBox,
    redactor: options.redactor,
    batcher: options.batcher,
    operational: options.operational ?? null,
    ...(options.tracing && { tracing: options.tracing }),
  };
}
