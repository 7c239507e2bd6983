/**
 * What an error page says, for the dashboard and the tenant portal alike: the status and a
 * sentence a person can act on. A refused CSRF check is 403, an API error keeps its status
 * and message, a client error (validation, 4xx) shows its message; anything else is 500
 * with no detail, and is logged.
 */
import type { FastifyError, FastifyRequest } from "fastify";
import { ApiError } from "../errors.ts";
import { CsrfError } from "./csrf.ts";

export function errorStatus(
  err: FastifyError | Error,
  request: FastifyRequest,
  opts: { internalDetail: string; logMessage: string },
): { status: number; detail: string } {
  if (err instanceof CsrfError)
    return { status: 403, detail: `Refused: ${err.message}. Reload the page and try again.` };
  if (err instanceof ApiError) return { status: err.status, detail: err.message };
  const fastifyError = err as FastifyError;
  if (fastifyError.validation) return { status: 400, detail: err.message };
  if ((fastifyError.statusCode ?? 500) < 500)
    return { status: fastifyError.statusCode!, detail: err.message };
  request.log.error({ err }, opts.logMessage);
  return { status: 500, detail: opts.internalDetail };
}
