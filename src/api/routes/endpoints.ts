/** /api/v1/app/{appId}/endpoint: endpoints, their secrets and delivery policies. */
import type { FastifyInstance } from "fastify";
import { currentSecret, rotateSecret } from "../../db/queries/endpoint-secrets.ts";
import {
  deleteEndpoint,
  type EndpointRow,
  getEndpoint,
  insertEndpoint,
  listEndpoints,
  updateEndpoint,
} from "../../db/queries/endpoints.ts";
import { notifyWork } from "../../db/queries/work.ts";
import { generateSecret } from "../../delivery/sign.ts";
import { ID_PREFIX, newId } from "../../ids.ts";
import { SsrfBlockedError } from "../../security/ssrf-guard.ts";
import type { ApiContext } from "../context.ts";
import {
  checkSecret,
  checkUrl,
  type EndpointIn,
  endpointIn,
  endpointPatch,
  REPLACE_DEFAULTS,
  toColumns,
} from "../endpoint-input.ts";
import { apiError, badRequest, isNotFound, notFound } from "../errors.ts";
import { type PageQuery, pageQuerySchema, planPage, toPage } from "../pagination.ts";
import { resolveAppId, resolveEndpointId } from "../resolve.ts";
import { appParams, checkPathUid, iso } from "../schemas.ts";
import { conflictOnUnique } from "../unique-violation.ts";

const endpointParams = {
  type: "object",
  properties: {
    appId: { type: "string", maxLength: 256 },
    endpointId: { type: "string", maxLength: 256 },
  },
  required: ["appId", "endpointId"],
} as const;

export const endpointOut = (r: EndpointRow) => ({
  id: r.id,
  uid: r.uid,
  url: r.url,
  description: r.description,
  version: 1,
  eventTypes: r.event_types,
  filterTypes: r.event_types,
  channels: r.channels,
  disabled: r.disabled,
  disabledReason: r.disabled_reason,
  metadata: r.metadata,
  throttleRate: r.throttle_rate,
  rateLimit: r.throttle_rate,
  timeoutMs: r.timeout_ms,
  maxAttempts: r.max_attempts,
  retryBaseMs: r.retry_base_ms,
  retryCapMs: r.retry_cap_ms,
  maxInFlight: r.max_in_flight,
  failureThreshold: r.failure_threshold,
  cooldownMs: r.cooldown_ms,
  ratePerSecond: r.rate_per_second,
  ratePerMinute: r.rate_per_minute,
  ratePerHour: r.rate_per_hour,
  createdAt: iso(r.created_at),
  updatedAt: iso(r.updated_at),
});

const uidTaken = conflictOnUnique("an endpoint with this uid already exists in this app");

export function registerEndpointRoutes(
  app: FastifyInstance,
  { pool, ssrfGuard, secretBox }: ApiContext,
): void {
  const create = (appId: string, body: EndpointIn) =>
    insertEndpoint(pool, {
      id: newId(ID_PREFIX.endpoint),
      appId,
      fields: toColumns(body),
      sealedSecret: secretBox.seal(body.secret ? checkSecret(body.secret) : generateSecret()),
    }).catch(uidTaken);

  /** PUT (`replace`: the fields left out take their defaults) or PATCH. */
  const update = async (id: string, body: EndpointIn, replace: boolean) => {
    const fields = { ...(replace ? REPLACE_DEFAULTS : {}), ...toColumns(body) };
    const row = await updateEndpoint(pool, id, fields).catch(uidTaken);
    if (!row) throw notFound("endpoint");
    // Re-enabled: its waiting backlog is due again.
    if (body.disabled === false) await notifyWork(pool);
    return row;
  };

  /** The SSRF guard at save time (it runs again at connect time, against DNS rebinding). */
  async function guardUrl(body: EndpointIn): Promise<void> {
    if (body.url === undefined) return;
    checkUrl(body.url);
    try {
      await ssrfGuard.checkUrl(body.url);
    } catch (err) {
      if (err instanceof SsrfBlockedError) {
        throw apiError("url_not_allowed", `url is not allowed: ${err.message}`, { cause: err });
      }
      throw err;
    }
  }

  type P = { Params: { appId: string; endpointId: string } };
  const target = async (request: {
    principal: Parameters<typeof resolveAppId>[1];
    params: P["Params"];
  }) => {
    const appId = await resolveAppId(pool, request.principal, request.params.appId);
    return { appId, endpointId: await resolveEndpointId(pool, appId, request.params.endpointId) };
  };

  app.get<{ Params: { appId: string }; Querystring: PageQuery }>(
    "/app/:appId/endpoint",
    {
      schema: {
        tags: ["endpoint"],
        params: appParams,
        querystring: { type: "object", properties: pageQuerySchema },
      },
    },
    async (request) => {
      const appId = await resolveAppId(pool, request.principal, request.params.appId);
      const plan = planPage(request.query, "ascending", ID_PREFIX.endpoint);
      const rows = await listEndpoints(pool, appId, plan.window);
      return toPage(rows, plan, (r) => r.id, endpointOut);
    },
  );

  app.post<{ Params: { appId: string }; Body: EndpointIn }>(
    "/app/:appId/endpoint",
    { schema: { tags: ["endpoint"], params: appParams, body: endpointIn } },
    async (request, reply) => {
      const appId = await resolveAppId(pool, request.principal, request.params.appId);
      await guardUrl(request.body);
      reply.code(201);
      return endpointOut(await create(appId, request.body));
    },
  );

  app.get<P>(
    "/app/:appId/endpoint/:endpointId",
    { schema: { tags: ["endpoint"], params: endpointParams } },
    async (request) => {
      const { endpointId } = await target(request);
      const row = await getEndpoint(pool, endpointId);
      if (!row) throw notFound("endpoint");
      return endpointOut(row);
    },
  );

  app.put<P & { Body: EndpointIn }>(
    "/app/:appId/endpoint/:endpointId",
    { schema: { tags: ["endpoint"], params: endpointParams, body: endpointIn } },
    async (request, reply) => {
      const appId = await resolveAppId(pool, request.principal, request.params.appId);
      await guardUrl(request.body);
      let endpointId: string;
      try {
        endpointId = await resolveEndpointId(pool, appId, request.params.endpointId);
      } catch (err) {
        if (!isNotFound(err)) throw err;
        reply.code(201);
        const body = {
          ...request.body,
          uid: request.body.uid ?? checkPathUid(request.params.endpointId),
        };
        return endpointOut(await create(appId, body));
      }
      if (request.body.secret !== undefined)
        throw badRequest("secret cannot be changed by PUT; use secret/rotate");
      return endpointOut(await update(endpointId, request.body, true));
    },
  );

  app.patch<P & { Body: EndpointIn }>(
    "/app/:appId/endpoint/:endpointId",
    { schema: { tags: ["endpoint"], params: endpointParams, body: endpointPatch } },
    async (request) => {
      const { endpointId } = await target(request);
      if (request.body.secret !== undefined)
        throw badRequest("secret cannot be changed by PATCH; use secret/rotate");
      await guardUrl(request.body);
      return endpointOut(await update(endpointId, request.body, false));
    },
  );

  app.delete<P>(
    "/app/:appId/endpoint/:endpointId",
    { schema: { tags: ["endpoint"], params: endpointParams } },
    async (request, reply) => {
      const { endpointId } = await target(request);
      await deleteEndpoint(pool, endpointId);
      return reply.code(204).send();
    },
  );

  app.get<P>(
    "/app/:appId/endpoint/:endpointId/secret",
    { schema: { tags: ["endpoint"], params: endpointParams } },
    async (request) => {
      const { endpointId } = await target(request);
      const sealed = await currentSecret(pool, endpointId);
      if (sealed === null) throw notFound("secret");
      return { key: secretBox.open(sealed) };
    },
  );

  app.post<P & { Body: { key?: string | null; gracePeriodSeconds?: number | null } | undefined }>(
    "/app/:appId/endpoint/:endpointId/secret/rotate",
    {
      schema: {
        tags: ["endpoint"],
        params: endpointParams,
        body: {
          type: ["object", "null"],
          additionalProperties: false,
          properties: {
            key: { type: ["string", "null"], maxLength: 128 },
            gracePeriodSeconds: { type: ["integer", "null"], minimum: 0, maximum: 7 * 86_400 },
          },
        },
      },
    },
    async (request, reply) => {
      const { endpointId } = await target(request);
      const next = request.body?.key ? checkSecret(request.body.key) : generateSecret();
      const graceSeconds = request.body?.gracePeriodSeconds ?? 86_400;
      await rotateSecret(pool, endpointId, secretBox.seal(next), graceSeconds);
      return reply.code(204).send();
    },
  );
}
