/**
 * Every failure an API request can meet, answered as `{ code, detail }` with the status the
 * registry gives its code (src/api/errors.ts, docs/errors.md): our own errors, schema
 * refusals, an empty JSON body, an unreachable database (503, docs/reliability.md), client
 * aborts, Fastify's own 4xx and router errors, unknown routes, and anything else as a 500.
 */
import type { FastifyError, FastifyReply, FastifyRequest, FastifyServerOptions } from "fastify";
import { isClientAbort, isDatabaseUnavailable } from "../db/unavailable.ts";
import { ApiError } from "../errors.ts";
import type { Logger } from "../logger.ts";
import { API_ERRORS, type ApiErrorCode, databaseUnavailable } from "./errors.ts";

/** Fastify's own 4xx errors, by Fastify code, in our vocabulary (others are bad_request). */
const FRAMEWORK_CODES: Record<string, ApiErrorCode> = {
  FST_ERR_CTP_BODY_TOO_LARGE: "payload_too_large",
  FST_ERR_CTP_INVALID_MEDIA_TYPE: "unsupported_media_type",
  FST_ERR_CTP_EMPTY_JSON_BODY: "empty_body",
};

/** Router-level failures (bad %-encoding, over-long params) in the same { code, detail } shape. */
export const frameworkErrors: FastifyServerOptions["frameworkErrors"] = (err, _request, reply) => {
  // The generic reply type here knows no routes; the body is our usual error shape.
  (reply as unknown as FastifyReply)
    .code(API_ERRORS.bad_request)
    .send({ code: "bad_request", detail: err.message });
};

/** The answer to a request no route matches. */
export function notFound(request: FastifyRequest, reply: FastifyReply): FastifyReply {
  return reply.code(API_ERRORS.not_found).send({
    code: "not_found",
    detail: `no route ${request.method} ${request.url.split("?")[0]}`,
  });
}

export interface ErrorHandlerOptions {
  /** where client aborts are told, at debug (request.log is at warn or above) */
  abortLog: Logger;
  /** whether the request's application/json body was empty (json-body-parser.ts) */
  hadEmptyBody(request: FastifyRequest): boolean;
}

/** The API's error handler (Fastify's setErrorHandler). */
export function makeErrorHandler(options: ErrorHandlerOptions) {
  const { abortLog, hadEmptyBody } = options;
  return (err: FastifyError | ApiError, request: FastifyRequest, reply: FastifyReply) => {
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
      if (err.validationContext === "body" && hadEmptyBody(request))
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
  };
}
