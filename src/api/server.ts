/**
 * Builds the HTTP API (no side effects: nothing listens until the caller says so, and tests
 * use `app.inject()`). Svix-shaped management API under /api/v1, plus /healthz and /docs.
 * It builds none of its parts: the caller (runtime.ts) hands them over ready-made and owns
 * their lifecycles.
 */
import swagger from "@fastify/swagger";
import swaggerUi from "@fastify/swagger-ui";
import Fastify, {
  type FastifyBaseLogger,
  type FastifyError,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
} from "fastify";
import secureJson from "secure-json-parse";
import { registerDashboard } from "../dashboard/plugin.ts";
import { isClientAbort, isDatabaseUnavailable } from "../db/unavailable.ts";
import { ApiError } from "../errors.ts";
import type { Logger } from "../logger.ts";
import type { Metrics } from "../ops/metrics.ts";
import { registerPortal } from "../portal/plugin.ts";
import type { Authenticate, CheckKey } from "./auth.ts";
import { checkBody } from "./body-check.ts";
import type { ApiContext } from "./context.ts";
import {
  API_ERRORS,
  type ApiErrorCode,
  apiError,
  badRequest,
  databaseUnavailable,
} from "./errors.ts";
import { registerIdempotency } from "./idempotency.ts";
import { makeInProcessCalls } from "./in-process.ts";
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
import { registerPortalAccessRoutes, registerPortalLogout } from "./routes/portal-access.ts";
import { registerSendExampleRoute } from "./routes/send-example.ts";
import { registerStatsRoutes } from "./routes/stats.ts";
import { utf8Problem } from "./utf8.ts";
import { bodyAjv, paramsAjv } from "./validators.ts";

export interface ApiOptions extends ApiContext {
  logger: Logger;
  /** served at /metrics */
  metrics: Metrics;
  /**
   * Who a request comes from: makeAuthenticator's bearer keys, checked with `checkKey`.
   */
  authenticate: Authenticate;
  /** What the dashboard's sign-in checks a typed key with: the same checker as `authenticate`'s. */
  checkKey: CheckKey;
  /** serve the OpenAPI document and UI at /docs (default true; tests may skip them) */
  docs?: boolean;
  /** serve the operator dashboard at /dashboard (default true) */
  dashboard?: boolean;
  /** serve the tenant portal at /portal (default true) */
  portal?: boolean;
}

/** Fastify's own 4xx errors, by Fastify code, in our vocabulary (others are bad_request). */
const FRAMEWORK_CODES: Record<string, ApiErrorCode> = {
  FST_ERR_CTP_BODY_TOO_LARGE: "payload_too_large",
  FST_ERR_CTP_INVALID_MEDIA_TYPE: "unsupported_media_type",
  FST_ERR_CTP_EMPTY_JSON_BODY: "empty_body",
};

export async function buildApi(options: ApiOptions): Promise<FastifyInstance> {
  const { pool, config, metrics, authenticate } = options;
  // (request.log is at warn or above: a line of its own for client aborts, at debug)
  const abortLog = options.logger.child({ component: "api" });
  /** requests whose application/json body was empty (or only whitespace) */
  const emptyBodies = new WeakSet<FastifyRequest>();
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
        .code(API_ERRORS.bad_request)
        .send({ code: "bad_request", detail: err.message });
    },
    bodyLimit: config.bodyLimitBytes,
    // Ids and iterators are short; anything longer is junk.
    routerOptions: { maxParamLength: 256 },
    trustProxy: false,
  });

  // Bodies: strict; query strings and params: coerced (src/api/validators.ts).
  const strict = bodyAjv();
  const coercing = paramsAjv();
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
  // exactly as sent. The bytes must be UTF-8 (docs/security.md, Input): decoding bad bytes
  // as U+FFFD would store and sign a body the client never sent.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser("application/json", { parseAs: "buffer" }, (request, body, done) => {
    const bytes = body as Buffer;
    const notUtf8 = utf8Problem(bytes, "request body");
    if (notUtf8) return done(apiError("invalid_json", notUtf8), undefined);
    const text = bytes.toString("utf8");
    request.rawBody = text;
    if (text.trim() === "") {
      // no body: a route that needs one answers empty_body (the error handler)
      emptyBodies.add(request);
      return done(null, undefined);
    }
    try {
      done(
        null,
        secureJson.parse(text, undefined, { protoAction: "error", constructorAction: "error" }),
      );
    } catch (err) {
      // secure-json-parse's refusal of a valid body: say what, and why (docs/security.md)
      const message = (err as Error).message;
      const detail = /forbidden (prototype|constructor) property/.test(message)
        ? "request body has a key named __proto__, or constructor holding prototype: refused, so that no receiver's JSON parser is handed a prototype-pollution key"
        : `request body is not valid JSON: ${message}`;
      done(apiError("invalid_json", detail, { cause: err }), undefined);
    }
  });

  // close() waits for every connection; one that is busy when it begins would then stay
  // open, idle, until the keep-alive timeout (72 s). Its last answer says "close" instead.
  let closing = false;
  app.addHook("preClose", (done) => {
    closing = true;
    done();
  });
  app.addHook("onSend", (_request, reply, payload, done) => {
    if (closing) reply.header("connection", "close");
    done(null, payload);
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
    if (isClientAbort(err)) {
      // The client hung up before its body was complete (docs/reliability.md): the client's
      // doing, not the database's. Told at debug; answered only if anyone is left to read it.
      abortLog.debug(
        { reqId: request.id, method: request.method, url: request.url.split("?")[0] },
        "client hung up before its request body was complete",
      );
      if (request.raw.socket?.writable !== true) {
        reply.hijack();
        return undefined;
      }
      return reply.code(API_ERRORS.body_aborted).send({
        code: "body_aborted",
        detail: "the request broke off before its body was complete",
      });
    }
    if (err instanceof ApiError)
      return reply.code(err.status).headers(err.headers).send(err.toJSON());
    if (err.validation) {
      // an empty JSON body on a route that takes one (docs/errors.md)
      if (err.validationContext === "body" && emptyBodies.has(request))
        return reply
          .code(API_ERRORS.empty_body)
          .send({ code: "empty_body", detail: "the body is empty; this route takes a JSON body" });
      const first = err.validation[0];
      const extra = (first?.params as { additionalProperty?: string } | undefined)
        ?.additionalProperty;
      const detail = extra
        ? `${err.validationContext ?? "request"}${first?.instancePath ?? ""} has unknown field "${extra}"`
        : err.message;
      return reply.code(API_ERRORS.validation_error).send({ code: "validation_error", detail });
    }
    if (isDatabaseUnavailable(err)) {
      // a restart or failover: the client retries (docs/reliability.md), no 500
      request.log.warn({ err }, "request failed: database unreachable");
      const unavailable = databaseUnavailable(err);
      return reply.code(unavailable.status).headers(unavailable.headers).send(unavailable.toJSON());
    }
    const status = err.statusCode ?? 500;
    if (status >= 400 && status < 500) {
      const code = FRAMEWORK_CODES[err.code] ?? "bad_request";
      return reply.code(API_ERRORS[code]).send({ code, detail: err.message });
    }
    request.log.error({ err }, "request failed");
    return reply
      .code(API_ERRORS.internal_error)
      .send({ code: "internal_error", detail: "internal error" });
  });
  app.setNotFoundHandler((request, reply) =>
    reply.code(API_ERRORS.not_found).send({
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

  const ctx: ApiContext = {
    pool,
    config,
    ssrfGuard: options.ssrfGuard,
    secretBox: options.secretBox,
    redactor: options.redactor,
    batcher: options.batcher,
    operational: options.operational ?? null,
  };
  // The dashboard calls the API's routes in-process as its signed-in principal.
  const calls = makeInProcessCalls(() => app);
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
      registerAttemptRoutes(api, ctx);
      registerEndpointHealthRoutes(api, ctx);
      registerOperationRoutes(api, ctx);
      registerMaintenanceRoutes(api, ctx);
      registerApiKeyRoutes(api, ctx);
      registerEventTypeRoutes(api, ctx);
      registerPortalAccessRoutes(api, ctx);
      registerSendExampleRoute(api, ctx);
      registerStatsRoutes(api, ctx);
    },
    { prefix: "/api/v1" },
  );
  if (options.dashboard !== false) {
    await registerDashboard(app, {
      ...ctx,
      calls,
      checkKey: options.checkKey,
    });
  }
  if (options.portal !== false) await registerPortal(app, { ...ctx, calls });
  // a portal link's own token, not an API key, authorizes its logout
  await app.register(async (api) => registerPortalLogout(api, ctx), { prefix: "/api/v1" });

  return app;
}
