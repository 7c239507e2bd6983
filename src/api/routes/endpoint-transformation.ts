/**
 * GET and PATCH /app/{app}/endpoint/{ep}/transformation: Svix's transformations (code that
 * rewrites a message per endpoint) are not a hookrelay feature. The routes exist so the
 * svix client's `endpoint.transformation...` calls get a clear, stable answer rather than a
 * 404 that reads like a missing endpoint: 400 `not_supported` (docs/errors.md), after the
 * app and endpoint are looked up as for any endpoint route (an unknown or out-of-reach one
 * is still 404). A message's `transformationsParams` is accepted and ignored
 * (routes/messages.ts; README.md, Using the svix client).
 */
import type { FastifyInstance, FastifyRequest } from "fastify";
import type { ApiContext } from "../context.ts";
import { apiError } from "../errors.ts";
import { resolveAppId, resolveEndpointId } from "../resolve.ts";

const DETAIL =
  "hookrelay has no transformations: a message is delivered as it was sent (endpoint filters, headers and postback templates shape what each endpoint gets)";

export function registerEndpointTransformationRoutes(
  app: FastifyInstance,
  { pool }: ApiContext,
): void {
  type P = { Params: { appId: string; endpointId: string } };
  const schema = {
    tags: ["endpoint"],
    summary: "Not supported: answers 400 not_supported",
    params: {
      type: "object",
      properties: {
        appId: { type: "string", minLength: 1, maxLength: 256 },
        endpointId: { type: "string", minLength: 1, maxLength: 256 },
      },
      required: ["appId", "endpointId"],
    },
  } as const;
  const refuse = async (request: FastifyRequest<P>) => {
    const appId = await resolveAppId(pool, request.principal, request.params.appId);
    await resolveEndpointId(pool, appId, request.params.endpointId);
    throw apiError("not_supported", DETAIL);
  };
  app.get<P>("/app/:appId/endpoint/:endpointId/transformation", { schema }, refuse);
  // no body schema: whatever the body says, the answer is the same
  app.patch<P>("/app/:appId/endpoint/:endpointId/transformation", { schema }, refuse);
}
