/** /api/v1/app/{appId}/endpoint: endpoints, their secrets and delivery policies. */
import type { FastifyInstance } from "fastify";
import { withRetriedTransaction, withTransaction } from "../../db/pool.ts";
import { currentSecrets, replaceSecrets } from "../../db/queries/endpoint-secrets.ts";
import {
  deleteEndpoint,
  type EndpointRow,
  getEndpoint,
  insertEndpoint,
  listEndpoints,
  lockEndpoint,
  updateEndpoint,
} from "../../db/queries/endpoints.ts";
import { notifyWork } from "../../db/queries/work.ts";
import { policyOut } from "../../domain/endpoint-policy-derived.ts";
import { OperationalEvent } from "../../domain/operational-events.ts";
import { ID_PREFIX, newId } from "../../ids.ts";
import { emitEndpointEvent } from "../../ops/operational-webhook.ts";
import { SsrfBlockedError } from "../../security/ssrf-guard.ts";
import type { ApiContext } from "../context.ts";
import {
  checkBrokerState,
  destinationColumns,
  destinationOut,
  isBrokerUrl,
} from "../destination-input.ts";
import { egressColumns, egressOut, proxyHostToCheck } from "../egress-input.ts";
import {
  checkUrl,
  type EndpointIn as EndpointFieldsIn,
  endpointIn,
  endpointPatch,
  REPLACE_DEFAULTS,
  toColumns,
} from "../endpoint-input.ts";
import {
  keysForCreate,
  rotation,
  SIGNATURE_SCHEMES,
  type SignatureSchemeChoice,
  type SigningIn,
  schemeChange,
  secretOut,
  withSigningFields,
} from "../endpoint-signing.ts";
import { apiError, badRequest, isNotFound, notFound } from "../errors.ts";
import { checkTokenUrl, oauth2Columns, oauth2Out, tokenUrlToCheck } from "../oauth2-input.ts";
import { type PageQuery, pageQuerySchema, planPage, toPage } from "../pagination.ts";
import { checkPostbackState, postbackOut, stateAfter, urlToCheck } from "../postback-input.ts";
import { resolveAppId, resolveEndpointId } from "../resolve.ts";
import {
  endpointPageResponse,
  endpointResponse,
  endpointSecretResponse,
} from "../response-schemas.ts";
import { appParams, checkPathUid, iso } from "../schemas.ts";
import { conflictOnUnique } from "../unique-violation.ts";

type EndpointIn = EndpointFieldsIn & SigningIn;
const createBody = withSigningFields(endpointIn);
const patchBody = withSigningFields(endpointPatch);

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
  // the url (a broker's with its password masked: docs/destinations.md), destinationKind
  ...destinationOut(r),
  description: r.description,
  version: 1,
  eventTypes: r.event_types,
  filterTypes: r.event_types,
  channels: r.channels,
  disabled: r.disabled,
  disabledReason: r.disabled_reason,
  metadata: r.metadata,
  // egress (docs/egress.md): secrets as ***
  ...egressOut(r),
  // OAuth2 client credentials (docs/oauth2.md): the secret as ***
  ...oauth2Out(r),
  // the delivery policy (domain/endpoint-policy.ts)
  ...policyOut(r),
  // postback endpoints
  ...postbackOut(r),
  createdAt: iso(r.created_at),
  updatedAt: iso(r.updated_at),
  // how it signs (api/endpoint-signing.ts)
  signatureScheme: r.signature_scheme,
});

const uidTaken = conflictOnUnique("an endpoint with this uid already exists in this app");

export function registerEndpointRoutes(
  app: FastifyInstance,
  { pool, ssrfGuard, secretBox, operational, config }: ApiContext,
): void {
  /**
   * The columns a body writes, checked together with what the endpoint keeps (`current`;
   * null for a new one), the URL token sealed like signing secrets.
   */
  const columnsOf = (body: EndpointIn, current: EndpointRow | null, replace: boolean) => {
    const fields = { ...(replace ? REPLACE_DEFAULTS : {}), ...toColumns(body) };
    // the destination's kind, and a broker url's password taken out and sealed
    if (fields.url !== undefined)
      Object.assign(fields, destinationColumns(fields.url, current, secretBox));
    // postback endpoints
    const state = stateAfter(current, fields);
    checkPostbackState(state);
    checkBrokerState({
      ...state,
      kind: fields.destination_kind ?? current?.destination_kind ?? "http",
    });
    if (typeof fields.url_token === "string") fields.url_token = secretBox.seal(fields.url_token);
    // egress: a pool, a proxy, mTLS (docs/egress.md), checked and sealed
    Object.assign(fields, egressColumns(body, current, config.egress, secretBox));
    // OAuth2 client credentials (docs/oauth2.md), checked, the secret sealed
    const kind = fields.destination_kind ?? current?.destination_kind ?? "http";
    Object.assign(fields, oauth2Columns(body, current, kind, secretBox));
    return fields;
  };

  // Every change is written with its operational event, in one transaction
  // (docs/operational-webhooks.md).
  const create = (appId: string, body: EndpointIn) => {
    const fields = columnsOf(body, null, false);
    const secrets = keysForCreate(secretBox, body);
    return withTransaction(pool, async (client) => {
      const row = await insertEndpoint(client, {
        id: newId(ID_PREFIX.endpoint),
        appId,
        fields,
        secrets,
      });
      await emitEndpointEvent(client, operational, OperationalEvent.endpointCreated, row);
      return row;
    }).catch(uidTaken);
  };

  /** PUT (`replace`: the fields left out take their defaults) or PATCH. */
  const update = async (id: string, body: EndpointIn, replace: boolean) => {
    const row = await withTransaction(pool, async (client) => {
      const before = await lockEndpoint(client, id);
      if (!before) return null;
      const fields = columnsOf(body, before, replace);
      if (body.signatureScheme !== undefined) {
        const current = await currentSecrets(client, id);
        await replaceSecrets(client, id, schemeChange(secretBox, current, body.signatureScheme));
      }
      const after = (await updateEndpoint(client, id, fields))!;
      await emitEndpointEvent(client, operational, OperationalEvent.endpointUpdated, after);
      if (before.disabled !== after.disabled) {
        await emitEndpointEvent(
          client,
          operational,
          after.disabled ? OperationalEvent.endpointDisabled : OperationalEvent.endpointEnabled,
          after,
          after.disabled ? { trigger: "manual" } : {},
        );
      }
      return { after, enabled: before.disabled && !after.disabled };
    }).catch(uidTaken);
    if (!row) throw notFound("endpoint");
    // Re-enabled (a PATCH, or a PUT that left `disabled` out): what it held is due again,
    // oldest first (docs/delivery.md, "While an endpoint is disabled").
    if (row.enabled) await notifyWork(pool);
    return row.after;
  };

  /** The SSRF guard at save time (it runs again at connect time, against DNS rebinding). */
  async function guardUrl(body: EndpointIn): Promise<void> {
    await guardProxy(body);
    await guardTokenUrl(body);
    if (body.url === undefined) return;
    checkUrl(body.url);
    try {
      if (isBrokerUrl(body.url)) {
        // a broker's host, vetted as a receiver's (again when the worker connects)
        await ssrfGuard.vetHost(new URL(body.url).hostname).catch((err: unknown) => {
          // a name that does not resolve yet is accepted, as for HTTP: the connect decides
          if (err instanceof SsrfBlockedError) throw err;
        });
        return;
      }
      // a URL template's host is literal: the guard checks it with the placeholders filled
      await ssrfGuard.checkUrl(urlToCheck(body.url));
    } catch (err) {
      if (err instanceof SsrfBlockedError) {
        throw apiError(
          "url_not_allowed",
          `url is not allowed: ${err.message} (the server's HOOKRELAY_SSRF_ALLOWLIST can exempt it)`,
          { cause: err },
        );
      }
      throw err;
    }
  }

  /**
   * An endpoint's own proxy is a stranger's address like its URL: the guard vets its host
   * when saved (and again each time the worker dials it; docs/egress.md).
   */
  async function guardProxy(body: EndpointIn): Promise<void> {
    let host: string | null;
    try {
      host = proxyHostToCheck(body);
    } catch {
      return; // (egressColumns answers invalid_proxy_url)
    }
    if (host === null) return;
    try {
      // (checkUrl: its DNS wait is bounded, and a name that does not resolve yet passes)
      await ssrfGuard.checkUrl(`http://${host.includes(":") ? `[${host}]` : host}/`);
    } catch (err) {
      if (err instanceof SsrfBlockedError) {
        throw apiError(
          "url_not_allowed",
          `proxyUrl is not allowed: ${err.message} (the server's HOOKRELAY_SSRF_ALLOWLIST can exempt it; an operator's proxy belongs in HOOKRELAY_EGRESS_POOLS)`,
          { cause: err },
        );
      }
      throw err;
    }
  }

  /**
   * An OAuth2 token URL is a stranger's address like the endpoint's URL: the guard checks
   * it when saved, and again each time the worker connects to it (docs/oauth2.md).
   */
  async function guardTokenUrl(body: EndpointIn): Promise<void> {
    const url = tokenUrlToCheck(body);
    if (url === null) return;
    checkTokenUrl(url);
    try {
      await ssrfGuard.checkUrl(url);
    } catch (err) {
      if (err instanceof SsrfBlockedError) {
        throw apiError(
          "url_not_allowed",
          `oauth2.tokenUrl is not allowed: ${err.message} (the server's HOOKRELAY_SSRF_ALLOWLIST can exempt it)`,
          { cause: err },
        );
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
        response: { 200: endpointPageResponse },
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
    { schema: { tags: ["endpoint"], params: appParams, body: createBody } },
    async (request, reply) => {
      const appId = await resolveAppId(pool, request.principal, request.params.appId);
      await guardUrl(request.body);
      reply.code(201);
      return endpointOut(await create(appId, request.body));
    },
  );

  app.get<P>(
    "/app/:appId/endpoint/:endpointId",
    { schema: { tags: ["endpoint"], params: endpointParams, response: { 200: endpointResponse } } },
    async (request) => {
      const { endpointId } = await target(request);
      const row = await getEndpoint(pool, endpointId);
      if (!row) throw notFound("endpoint");
      return endpointOut(row);
    },
  );

  app.put<P & { Body: EndpointIn }>(
    "/app/:appId/endpoint/:endpointId",
    { schema: { tags: ["endpoint"], params: endpointParams, body: createBody } },
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
    { schema: { tags: ["endpoint"], params: endpointParams, body: patchBody } },
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
      await withRetriedTransaction(pool, async (client) => {
        const gone = await deleteEndpoint(client, endpointId);
        if (gone)
          await emitEndpointEvent(client, operational, OperationalEvent.endpointDeleted, gone);
      });
      return reply.code(204).send();
    },
  );

  app.get<P>(
    "/app/:appId/endpoint/:endpointId/secret",
    {
      schema: {
        tags: ["endpoint"],
        params: endpointParams,
        response: { 200: endpointSecretResponse },
      },
    },
    async (request) => {
      const { endpointId } = await target(request);
      const current = await currentSecrets(pool, endpointId);
      if (current.length === 0) throw notFound("secret");
      // never the whsk_ secret key: an Ed25519 endpoint shows its whpk_ public key
      return secretOut(secretBox, current);
    },
  );

  type RotateBody = {
    key?: string | null;
    gracePeriodSeconds?: number | null;
    scheme?: SignatureSchemeChoice | null;
  };
  app.post<P & { Body: RotateBody | undefined }>(
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
            // the scheme(s) of the new keys (api/endpoint-signing.ts); default: the key's, or as now
            scheme: { type: ["string", "null"], enum: [...SIGNATURE_SCHEMES, null] },
          },
        },
      },
    },
    async (request, reply) => {
      const { endpointId } = await target(request);
      const graceSeconds = request.body?.gracePeriodSeconds ?? 86_400;
      await withTransaction(pool, async (client) => {
        const change = rotation(
          secretBox,
          await currentSecrets(client, endpointId),
          request.body ?? {},
        );
        await replaceSecrets(client, endpointId, { ...change, graceSeconds });
      });
      return reply.code(204).send();
    },
  );
}
