/**
 * Builds the HTTP API (no side effects: nothing listens until the caller says so, and tests
 * use `app.inject()`). Svix-shaped management API under /api/v1, plus /healthz and /docs.
 */
import swagger from "@fastify/swagger";
import swaggerUi from "@fastify/swagger-ui";
import { Ajv } from "ajv";
import addFormats from "ajv-formats";
import Fastify, {
  type FastifyBaseLogger,
  type FastifyError,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
} from "fastify";
import secureJson from "secure-json-parse";
import type { Config } from "../config.ts";
import type { Pool } from "../db/pool.ts";
import { ApiError, badRequest } from "../errors.ts";
import type { Logger } from "../logger.ts";
import { type Metrics, makeMetrics } from "../ops/metrics.ts";
import { makeRedactor, type Redactor } from "../security/redact.ts";
import { makeSecretBox, type SecretBox } from "../security/secret-box.ts";
import { makeSsrfGuard, type SsrfGuard } from "../security/ssrf-guard.ts";
import { makeAuthenticator, type Principal } from "./auth.ts";
import { checkBody } from "./body-check.ts";
import { registerIdempotency } from "./idempotency.ts";
import { makeKeyRateLimiter } from "./key-rate-limit.ts";
import { registerApiKeyRoutes } from "./routes/api-keys.ts";
import { registerApplicationRoutes } from "./routes/applications.ts";
import { registerAttemptRoutes } from "./routes/attempts.ts";
import { registerEndpointHealthRoutes } from "./routes/endpoint-health.ts";
import { registerEndpointRoutes } from "./routes/endpoints.ts";
import { registerEventTypeRoutes } from "./routes/event-types.ts";
import { registerHealthRoutes, registerMetricsRoute } from "./routes/health.ts";
import { registerMaintenanceRoutes } from "./routes/maintenance.ts";
import { registerMessageRoutes } from "./routes/messages.ts";
import { registerOperationRoutes } from "./routes/operations.ts";

export interface ApiOptions {
  pool: Pool;
  config: Config;
  logger: Logger;
  /** checks endpoint URLs when they are saved; default: one built from config.ssrfAllowlist */
  ssrfGuard?: SsrfGuard;
  /** served at /metrics; default: queue-wide gauges only */
  metrics?: Metrics;
  /** seals signing secrets at rest; default: one built from the configuration */
  secretBox?: SecretBox;
  /**
   * Replaces bearer-key authentication. Only for in-process callers that already hold the
   * database credentials (the CLI drives the API through inject() this way); never set
   * for a listening server.
   */
  authenticate?: (request: FastifyRequest) => Promise<Principal>;
  /** serve the OpenAPI document and UI at /docs (default true; the CLI skips them) */
  docs?: boolean;
}

export interface ApiContext extends ApiOptions {
  ssrfGuard: SsrfGuard;
  secretBox: SecretBox;
  /** masks sensitive values in URLs and texts of listings */
  redactor: Redactor;
}

export async function buildApi(options: ApiOptions): Promise<FastifyInstance> {
  const { pool, config } = options;
  const app = Fastify({
    // Per-request logging off (at least warn): at thousands of requests a second it is noise.
    loggerInstance: options.logger.child(
      { component: "api" },
      { level: options.logger.levelVal > 40 ? options.logger.level : "warn" },
    ) as FastifyBaseLogger,
    // Router-level failures (bad %-encoding, over-long params) in the same { code, detail } shape.
    frameworkErrors: (err, _request, reply) => {
      // The generic reply type here knows no routes; the body is our usual error shape.
      (reply as unknown as FastifyReply)
        .code(err.statusCode ?? 400)
        .send({ code: "bad_request", detail: err.message });
    },
    bodyLimit: config.bodyLimitBytes,
    // Ids and iterators are short; anything longer is junk.
    routerOptions: { maxParamLength: 256 },
    trustProxy: false,
  });

  // Bodies: no type coercion and no silent stripping of unknown fields, so a typo is an
  // error, not a field quietly ignored. Query strings and params: coerce "5" to 5.
  const strict = addFormats.default(
    new Ajv({ removeAdditional: false, coerceTypes: false, allErrors: false, useDefaults: true }),
  );
  const coercing = addFormats.default(
    new Ajv({ removeAdditional: false, coerceTypes: "array", allErrors: false, useDefaults: true }),
  );
  app.setValidatorCompiler(({ schema, httpPart }) => {
    if (httpPart === "body") return strict.compile(schema);
    const validate = coercing.compile(schema);
    // Coercion turns "1e999" into Infinity, which then skips minimum/maximum: refuse it.
    const checked: ((data: unknown) => boolean) & { errors?: unknown } = (
      data: unknown,
    ): boolean => {
      checked.errors = null;
      if (!validate(data)) {
        checked.errors = validate.errors;
        return false;
      }
      for (const [k, v] of Object.entries((data ?? {}) as Record<string, unknown>)) {
        if (typeof v === "number" && !Number.isFinite(v)) {
          checked.errors = [
            {
              instancePath: `/${k}`,
              schemaPath: "",
              keyword: "type",
              params: {},
              message: "must be a finite number",
            },
          ];
          return false;
        }
      }
      return true;
    };
    return checked as ReturnType<typeof coercing.compile>;
  });

  // JSON only (anything else is 415), and keep the raw text: message payloads are stored
  // exactly as sent.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser("application/json", { parseAs: "string" }, (request, body, done) => {
    const text = body as string;
    request.rawBody = text;
    if (text.trim() === "") return done(null, undefined);
    try {
      done(
        null,
        secureJson.parse(text, undefined, { protoAction: "error", constructorAction: "error" }),
      );
    } catch (err) {
      done(
        new ApiError(
          400,
          "invalid_json",
          `request body is not valid JSON: ${(err as Error).message}`,
        ),
        undefined,
      );
    }
  });

  // PostgreSQL text cannot hold NUL, and no identifier or name needs one.
  app.addHook("onRequest", async (request) => {
    if (/%00/.test(request.url)) throw badRequest("NUL characters are not allowed in the URL");
  });
  app.addHook("preValidation", async (request) => {
    if (request.body === undefined) return;
    const problem = checkBody(request.body);
    if (problem) throw badRequest(problem);
  });

  app.setErrorHandler((err: FastifyError | ApiError, request, reply) => {
    if (err instanceof ApiError)
      return reply.code(err.status).headers(err.headers).send(err.toJSON());
    if (err.validation) {
      const first = err.validation[0];
      const extra = (first?.params as { additionalProperty?: string } | undefined)
        ?.additionalProperty;
      const detail = extra
        ? `${err.validationContext ?? "request"}${first?.instancePath ?? ""} has unknown field "${extra}"`
        : err.message;
      return reply.code(422).send({ code: "validation_error", detail });
    }
    const status = err.statusCode ?? 500;
    if (status >= 400 && status < 500) {
      const code =
        err.code === "FST_ERR_CTP_BODY_TOO_LARGE"
          ? "payload_too_large"
          : err.code === "FST_ERR_CTP_INVALID_MEDIA_TYPE"
            ? "unsupported_media_type"
            : err.code === "FST_ERR_CTP_EMPTY_JSON_BODY"
              ? "empty_body"
              : "bad_request";
      return reply.code(status).send({ code, detail: err.message });
    }
    request.log.error({ err }, "request failed");
    return reply.code(500).send({ code: "internal_error", detail: "internal error" });
  });
  app.setNotFoundHandler((request, reply) =>
    reply.code(404).send({
      code: "not_found",
      detail: `no route ${request.method} ${request.url.split("?")[0]}`,
    }),
  );

  if (options.docs !== false) {
    await app.register(swagger, {
      openapi: {
        info: {
          title: "hookrelay",
          version: "0.1.0",
          description: "Webhook and postback delivery, Svix-compatible API",
        },
        components: { securitySchemes: { bearer: { type: "http", scheme: "bearer" } } },
        security: [{ bearer: [] }],
      },
    });
    await app.register(swaggerUi, { routePrefix: "/docs" });
  }

  const authenticate = options.authenticate ?? makeAuthenticator(pool, config.adminKey);
  const ctx: ApiContext = {
    ...options,
    ssrfGuard: options.ssrfGuard ?? makeSsrfGuard({ allowlist: config.ssrfAllowlist }),
    secretBox:
      options.secretBox ?? makeSecretBox(config.encryptionKey, config.encryptionKeyPrevious),
    redactor: makeRedactor(config.sensitiveFields),
  };
  registerHealthRoutes(app, ctx);
  registerMetricsRoute(
    app,
    options.metrics ?? makeMetrics({ pool, maxEndpointLabels: config.metricsMaxEndpoints }),
    config.metricsToken,
  );
  await app.register(
    async (api) => {
      api.decorateRequest("principal", null as unknown as never);
      const limiter = makeKeyRateLimiter(config.apiRateLimitPerSecond);
      api.addHook("onRequest", async (request) => {
        request.principal = await authenticate(request);
        limiter.take(request.principal.keyId);
      });
      registerIdempotency(api, pool, config.idempotencyTtlMs);
      registerApplicationRoutes(api, ctx);
      registerEndpointRoutes(api, ctx);
      registerMessageRoutes(api, ctx);
      registerAttemptRoutes(api, ctx);
      registerEndpointHealthRoutes(api, ctx);
      registerOperationRoutes(api, ctx);
      registerMaintenanceRoutes(api, ctx);
      registerApiKeyRoutes(api, ctx);
      registerEventTypeRoutes(api, ctx);
    },
    { prefix: "/api/v1" },
  );

  return app;
}
