/** /api/v1/app/{appId}/endpoint: endpoints, their secrets and delivery policies. */
import type { FastifyInstance } from "fastify";
import { currentSecret, rotateSecret } from "../../db/queries/endpoint-secrets.ts";
import {
  deleteEndpoint,
  type EndpointFields,
  type EndpointRow,
  getEndpoint,
  insertEndpoint,
  listEndpoints,
  updateEndpoint,
} from "../../db/queries/endpoints.ts";
import { notifyWork } from "../../db/queries/work.ts";
import { generateSecret, InvalidSecretError, secretKey } from "../../delivery/sign.ts";
import { ID_PREFIX, newId } from "../../ids.ts";
import { SsrfBlockedError } from "../../security/ssrf-guard.ts";
import type { ApiContext } from "../context.ts";
import { apiError, badRequest, isNotFound, notFound, validationError } from "../errors.ts";
import { type PageQuery, pageQuerySchema, planPage, toPage } from "../pagination.ts";
import { resolveAppId, resolveEndpointId } from "../resolve.ts";
import {
  appParams,
  checkPathUid,
  iso,
  metadataSchema,
  nameListSchema,
  uidSchema,
} from "../schemas.ts";
import { conflictOnUnique } from "../unique-violation.ts";

type EndpointIn = Partial<{
  url: string;
  description: string;
  eventTypes: string[] | null;
  filterTypes: string[] | null;
  channels: string[] | null;
  disabled: boolean;
  metadata: Record<string, string>;
  headers: Record<string, string> | null;
  uid: string | null;
  throttleRate: number | null;
  rateLimit: number | null;
  secret: string | null;
  version: number;
  timeoutMs: number | null;
  maxAttempts: number | null;
  retryBaseMs: number | null;
  retryCapMs: number | null;
  maxInFlight: number | null;
  failureThreshold: number | null;
  cooldownMs: number | null;
  ratePerSecond: number | null;
  ratePerMinute: number | null;
  ratePerHour: number | null;
}>;

/** Headers the signature scheme or HTTP itself owns; endpoints may not set them. */
const RESERVED_HEADERS = new Set([
  "webhook-id",
  "webhook-timestamp",
  "webhook-signature",
  "content-type",
  "content-length",
  "host",
  "connection",
  "transfer-encoding",
  "keep-alive",
  "upgrade",
  "te",
  "trailer",
]);

const nullableInt = (minimum: number, maximum: number) =>
  ({ type: ["integer", "null"], minimum, maximum }) as const;

const endpointProperties = {
  url: { type: "string", minLength: 1, maxLength: 2048 },
  description: { type: "string", maxLength: 2048 },
  eventTypes: nameListSchema,
  filterTypes: nameListSchema,
  channels: nameListSchema,
  disabled: { type: "boolean" },
  metadata: metadataSchema,
  headers: {
    type: ["object", "null"],
    // visible ASCII, tab and obs-text; CR/LF would split the request
    additionalProperties: {
      type: "string",
      maxLength: 4096,
      pattern: "^[\\t\\x20-\\x7e\\x80-\\xff]*$",
    },
    propertyNames: { pattern: "^[!#$%&'*+\\-.^_`|~0-9A-Za-z]+$", maxLength: 256 },
    maxProperties: 32,
  },
  uid: uidSchema,
  throttleRate: nullableInt(1, 1_000_000),
  rateLimit: nullableInt(1, 1_000_000),
  secret: { type: ["string", "null"], maxLength: 128 },
  version: { type: "integer", minimum: 1 },
  timeoutMs: nullableInt(100, 300_000),
  maxAttempts: nullableInt(1, 100),
  retryBaseMs: nullableInt(0, 86_400_000),
  retryCapMs: nullableInt(0, 604_800_000),
  maxInFlight: nullableInt(1, 10_000),
  failureThreshold: nullableInt(1, 10_000),
  cooldownMs: nullableInt(1_000, 86_400_000),
  ratePerSecond: nullableInt(1, 1_000_000),
  ratePerMinute: nullableInt(1, 60_000_000),
  ratePerHour: nullableInt(1, 1_000_000_000),
} as const;
const endpointIn = {
  type: "object",
  additionalProperties: false,
  properties: endpointProperties,
  required: ["url"],
} as const;
const endpointPatch = {
  type: "object",
  additionalProperties: false,
  properties: endpointProperties,
} as const;
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

/** Checks what JSON schema cannot; returns the body's fields as column values. */
function toColumns(body: EndpointIn): Partial<EndpointFields> {
  const cols: Partial<EndpointFields> = {};
  if (body.url !== undefined) cols.url = checkUrl(body.url);
  if (body.description !== undefined) cols.description = body.description;
  const types = body.eventTypes !== undefined ? body.eventTypes : body.filterTypes;
  if (types !== undefined) cols.event_types = types && types.length > 0 ? types : null;
  if (body.channels !== undefined)
    cols.channels = body.channels && body.channels.length > 0 ? body.channels : null;
  if (body.disabled !== undefined) {
    cols.disabled = body.disabled;
    cols.disabled_reason = body.disabled ? "operator" : null;
  }
  if (body.metadata !== undefined) cols.metadata = body.metadata;
  if (body.headers !== undefined) cols.headers = checkHeaders(body.headers ?? {});
  if (body.uid !== undefined) cols.uid = body.uid;
  const rate = body.throttleRate !== undefined ? body.throttleRate : body.rateLimit;
  if (rate !== undefined) cols.throttle_rate = rate;
  if (body.timeoutMs !== undefined) cols.timeout_ms = body.timeoutMs;
  if (body.maxAttempts !== undefined) cols.max_attempts = body.maxAttempts;
  if (body.retryBaseMs !== undefined) cols.retry_base_ms = body.retryBaseMs;
  if (body.retryCapMs !== undefined) cols.retry_cap_ms = body.retryCapMs;
  if (body.maxInFlight !== undefined) cols.max_in_flight = body.maxInFlight;
  if (body.failureThreshold !== undefined) cols.failure_threshold = body.failureThreshold;
  if (body.cooldownMs !== undefined) cols.cooldown_ms = body.cooldownMs;
  if (body.ratePerSecond !== undefined) cols.rate_per_second = body.ratePerSecond;
  if (body.ratePerMinute !== undefined) cols.rate_per_minute = body.ratePerMinute;
  if (body.ratePerHour !== undefined) cols.rate_per_hour = body.ratePerHour;
  if (
    typeof cols.retry_base_ms === "number" &&
    typeof cols.retry_cap_ms === "number" &&
    cols.retry_cap_ms < cols.retry_base_ms
  ) {
    throw badRequest("retryCapMs must be >= retryBaseMs");
  }
  return cols;
}

/** Defaults a PUT gives to the fields it leaves out. */
const REPLACE_DEFAULTS: Partial<EndpointFields> = {
  description: "",
  event_types: null,
  channels: null,
  disabled: false,
  disabled_reason: null,
  metadata: {},
  throttle_rate: null,
  timeout_ms: null,
  max_attempts: null,
  retry_base_ms: null,
  retry_cap_ms: null,
  max_in_flight: null,
  failure_threshold: null,
  cooldown_ms: null,
  rate_per_second: null,
  rate_per_minute: null,
  rate_per_hour: null,
};

function checkUrl(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw validationError(`url is not a valid absolute URL`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw validationError(`url must use http or https, not ${url.protocol.replace(":", "")}`);
  }
  if (url.username || url.password) {
    throw validationError("url must not contain credentials; send them in custom headers instead");
  }
  return raw;
}

function checkHeaders(headers: Record<string, string>): Record<string, string> {
  for (const name of Object.keys(headers)) {
    if (RESERVED_HEADERS.has(name.toLowerCase()))
      throw validationError(`header ${name} is set by hookrelay and cannot be overridden`);
  }
  return headers;
}

function checkSecret(secret: string): string {
  try {
    secretKey(secret);
  } catch (err) {
    if (err instanceof InvalidSecretError) throw validationError(err.message, { cause: err });
    throw err;
  }
  return secret.startsWith("whsec_") ? secret : `whsec_${secret}`;
}

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
