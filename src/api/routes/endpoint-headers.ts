/**
 * Svix's endpoint header calls (README.md, Using the svix client):
 *   GET   /app/{app}/endpoint/{ep}/headers  { headers, sensitive }: sensitive values masked
 *                                           (security/sensitive-headers.ts)
 *   PUT   /app/{app}/endpoint/{ep}/headers  { headers }: replaces them all; 204
 *   PATCH /app/{app}/endpoint/{ep}/headers  { headers, deleteHeaders? }: merges, a null value
 *                                           or a listed name removes one; 204
 * The same refusals as an endpoint body's `headers` (delivery/endpoint-headers.ts); a change
 * is an endpoint.updated operational event, written in its transaction.
 */
import type { FastifyInstance } from "fastify";
import { withTransaction } from "../../db/pool.ts";
import { endpointHeaders, lockEndpointHeaders } from "../../db/queries/endpoint-headers.ts";
import { updateEndpoint } from "../../db/queries/endpoints.ts";
import { OperationalEvent } from "../../domain/operational-events.ts";
import { emitEndpointEvent } from "../../ops/operational-webhook.ts";
import { maskedHeaders } from "../../security/sensitive-headers.ts";
import type { ApiContext } from "../context.ts";
import {
  type HeadersPatchIn,
  headersPatchBody,
  headersPutBody,
  patchedHeaders,
  replacedHeaders,
} from "../endpoint-headers-input.ts";
import { notFound } from "../errors.ts";
import { resolveAppId, resolveEndpointId } from "../resolve.ts";
import { endpointHeadersResponse } from "../response-schemas.ts";

const endpointParams = {
  type: "object",
  properties: {
    appId: { type: "string", minLength: 1, maxLength: 256 },
    endpointId: { type: "string", minLength: 1, maxLength: 256 },
  },
  required: ["appId", "endpointId"],
} as const;

type P = { Params: { appId: string; endpointId: string } };

export function registerEndpointHeaderRoutes(
  app: FastifyInstance,
  { pool, redactor, operational }: ApiContext,
): void {
  const target = async (request: {
    principal: Parameters<typeof resolveAppId>[1];
    params: P["Params"];
  }) => {
    const appId = await resolveAppId(pool, request.principal, request.params.appId);
    return resolveEndpointId(pool, appId, request.params.endpointId);
  };

  /** Writes the headers `change` makes of the stored ones, with its operational event. */
  const write = (id: string, change: (stored: Record<string, string>) => Record<string, string>) =>
    withTransaction(pool, async (client) => {
      const stored = await lockEndpointHeaders(client, id);
      if (stored === null) throw notFound("endpoint");
      const row = (await updateEndpoint(client, id, { headers: change(stored) }))!;
      await emitEndpointEvent(client, operational, OperationalEvent.endpointUpdated, row);
    });

  app.get<P>(
    "/app/:appId/endpoint/:endpointId/headers",
    {
      schema: {
        tags: ["endpoint"],
        summary: "The endpoint's custom headers, sensitive values masked",
        params: endpointParams,
        response: { 200: endpointHeadersResponse },
      },
    },
    async (request) => {
      const id = await target(request);
      const stored = await endpointHeaders(pool, id);
      if (stored === null) throw notFound("endpoint");
      return maskedHeaders(stored, redactor.isSensitive);
    },
  );

  app.put<P & { Body: { headers: Record<string, string> } }>(
    "/app/:appId/endpoint/:endpointId/headers",
    {
      schema: {
        tags: ["endpoint"],
        summary: "Replace the endpoint's custom headers",
        params: endpointParams,
        body: headersPutBody,
      },
    },
    async (request, reply) => {
      const id = await target(request);
      await write(id, (stored) =>
        replacedHeaders(stored, request.body.headers, redactor.isSensitive),
      );
      return reply.code(204).send();
    },
  );

  app.patch<P & { Body: HeadersPatchIn }>(
    "/app/:appId/endpoint/:endpointId/headers",
    {
      schema: {
        tags: ["endpoint"],
        summary: "Merge into the endpoint's custom headers (null or deleteHeaders removes one)",
        params: endpointParams,
        body: headersPatchBody,
      },
    },
    async (request, reply) => {
      const id = await target(request);
      await write(id, (stored) => patchedHeaders(stored, request.body, redactor.isSensitive));
      return reply.code(204).send();
    },
  );
}
