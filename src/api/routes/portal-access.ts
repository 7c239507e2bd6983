/**
 * Access links to the tenant portal (docs/portal.md), in Svix's shapes:
 *   POST /auth/app-portal-access/{appId}            a new link: { url, token, id, expiresAt }
 *   GET  /auth/app/{appId}/portal-access            the app's links (never their tokens)
 *   POST /auth/app/{appId}/portal-access/{id}/revoke  one link, and its sessions, end now
 *   POST /auth/app/{appId}/expire-all               Svix's "expire all": every live link
 *                                                   (or those with given sessionIds)
 *   POST /auth/logout                               with the link's token as the bearer:
 *                                                   that link ends (registerPortalLogout)
 * An admin key or the app's own key may issue and end links; a link never grants more than
 * its app.
 */
import type { FastifyInstance, FastifyRequest } from "fastify";
import {
  expireAppPortalTokens,
  insertPortalToken,
  listPortalTokens,
  type PortalTokenRow,
  purgeEndedPortalTokens,
  revokePortalToken,
  revokePortalTokenByHash,
} from "../../db/queries/portal-access.ts";
import { ID_PREFIX, newId } from "../../ids.ts";
import {
  generatePortalToken,
  isPortalTokenShape,
  portalSecretHash,
} from "../../security/portal-token.ts";
import type { ApiContext } from "../context.ts";
import { apiError, isNotFound, notFound } from "../errors.ts";
import { resolveAppId } from "../resolve.ts";
import { appParams, checkPathUid, iso } from "../schemas.ts";
import { type AppIn, appIn, createApp } from "./applications.ts";

/** Svix's AppPortalCapability values; a link gets all of them unless it names some. */
export const PORTAL_CAPABILITIES = [
  "ViewBase",
  "ViewEndpointSecret",
  "ManageEndpointSecret",
  "ManageTransformations",
  "CreateAttempts",
  "ManageEndpoint",
] as const;
export type PortalCapability = (typeof PORTAL_CAPABILITIES)[number];

/** Link lifetime in seconds: default 1 h, from 1 minute up to 7 days (Svix's maximum). */
export const PORTAL_EXPIRY = { defaultSeconds: 3_600, min: 60, max: 7 * 86_400 } as const;

export interface PortalAccessIn {
  application?: AppIn | null;
  readOnly?: boolean | null;
  capabilities?: PortalCapability[] | null;
  featureFlags?: string[];
  expiry?: number | null;
  sessionId?: string | null;
}

const portalAccessIn = {
  type: ["object", "null"],
  additionalProperties: false,
  properties: {
    application: { ...appIn, type: ["object", "null"] },
    readOnly: { type: ["boolean", "null"] },
    capabilities: {
      type: ["array", "null"],
      items: { type: "string", enum: PORTAL_CAPABILITIES },
      maxItems: PORTAL_CAPABILITIES.length,
    },
    // accepted for Svix compatibility; the portal has no feature-flagged event types
    featureFlags: { type: "array", items: { type: "string", maxLength: 256 }, maxItems: 32 },
    expiry: { type: ["integer", "null"], minimum: PORTAL_EXPIRY.min, maximum: PORTAL_EXPIRY.max },
    sessionId: { type: ["string", "null"], minLength: 1, maxLength: 256 },
  },
} as const;

const portalAccessOut = {
  type: "object",
  properties: {
    url: { type: "string" },
    token: { type: "string" },
    id: { type: "string" },
    expiresAt: { type: "string", format: "date-time" },
  },
} as const;

const tokenOut = (r: PortalTokenRow) => ({
  id: r.id,
  appId: r.app_id,
  capabilities: r.capabilities,
  sessionId: r.session_label,
  createdAt: iso(r.created_at),
  expiresAt: iso(r.expires_at),
  revokedAt: iso(r.revoked_at),
});

/** The capabilities a link gets from the request: readOnly = ViewBase only. */
function capabilitiesOf(body: PortalAccessIn): PortalCapability[] {
  if (body.capabilities) return [...new Set<PortalCapability>(["ViewBase", ...body.capabilities])];
  if (body.readOnly) return ["ViewBase"];
  return [...PORTAL_CAPABILITIES];
}

/** Where browsers reach the portal: HOOKRELAY_PUBLIC_URL, else the request's own origin. */
export function publicBase(request: FastifyRequest, publicUrl: string | undefined): string {
  return publicUrl ?? `${request.protocol}://${request.host}`;
}

/**
 * A new portal link to the app named `appIdOrUid` (Svix's app-portal-access, and its older
 * dashboard-access: routes/dashboard-access.ts).
 */
export async function issuePortalLink(
  { pool, config }: Pick<ApiContext, "pool" | "config">,
  request: FastifyRequest,
  appIdOrUid: string,
  body: PortalAccessIn,
) {
  const appId = await resolveAppId(pool, request.principal, appIdOrUid).catch(async (err) => {
    // Svix: `application` creates the app when the path names none (admin keys only)
    if (!body.application || !isNotFound(err) || request.principal.role !== "admin") throw err;
    const created = await createApp(pool, {
      ...body.application,
      uid: body.application.uid ?? checkPathUid(appIdOrUid),
    });
    return created.id;
  });
  await purgeEndedPortalTokens(pool, appId);
  const token = generatePortalToken();
  const row = await insertPortalToken(pool, {
    id: newId(ID_PREFIX.portalToken),
    appId,
    hash: portalSecretHash(token),
    capabilities: capabilitiesOf(body),
    sessionLabel: body.sessionId ?? null,
    expirySeconds: body.expiry ?? PORTAL_EXPIRY.defaultSeconds,
  });
  // The token rides in the fragment: browsers send it neither to the server in the
  // request line nor onward in Referer (docs/portal.md).
  const url = `${publicBase(request, config.publicUrl)}/portal/#token=${token}`;
  return { url, token, id: row.id, expiresAt: iso(row.expires_at) };
}

export function registerPortalAccessRoutes(app: FastifyInstance, { pool, config }: ApiContext) {
  app.post<{ Params: { appId: string }; Body: PortalAccessIn | null | undefined }>(
    "/auth/app-portal-access/:appId",
    {
      // the answer holds the link's token, which is stored only as a hash: never replayed
      // (svix clients send an idempotency-key on every POST); a retry makes another link
      config: { idempotency: false },
      schema: {
        tags: ["portal"],
        summary: "A short-lived link to the app's portal",
        params: appParams,
        body: portalAccessIn,
        response: { 200: portalAccessOut },
      },
    },
    async (request) =>
      issuePortalLink({ pool, config }, request, request.params.appId, request.body ?? {}),
  );

  app.get<{ Params: { appId: string } }>(
    "/auth/app/:appId/portal-access",
    { schema: { tags: ["portal"], summary: "The app's portal links", params: appParams } },
    async (request) => {
      const appId = await resolveAppId(pool, request.principal, request.params.appId);
      return { data: (await listPortalTokens(pool, appId)).map(tokenOut) };
    },
  );

  app.post<{ Params: { appId: string; tokenId: string } }>(
    "/auth/app/:appId/portal-access/:tokenId/revoke",
    {
      schema: {
        tags: ["portal"],
        summary: "End one portal link and its sessions now",
        params: {
          type: "object",
          properties: {
            appId: { type: "string", minLength: 1, maxLength: 256 },
            tokenId: { type: "string", minLength: 1, maxLength: 256 },
          },
          required: ["appId", "tokenId"],
        },
      },
    },
    async (request, reply) => {
      const appId = await resolveAppId(pool, request.principal, request.params.appId);
      if (!(await revokePortalToken(pool, appId, request.params.tokenId)))
        throw notFound("portal link");
      return reply.code(204).send();
    },
  );

  app.post<{
    Params: { appId: string };
    Body: { expiry?: number | null; sessionIds?: string[] } | null | undefined;
  }>(
    "/auth/app/:appId/expire-all",
    {
      schema: {
        tags: ["portal"],
        summary: "Expire every portal link of the app (Svix's expire-all)",
        params: appParams,
        body: {
          type: ["object", "null"],
          additionalProperties: false,
          properties: {
            // seconds until the links expire; 0 (the default) = now
            expiry: { type: ["integer", "null"], minimum: 0, maximum: PORTAL_EXPIRY.max },
            sessionIds: {
              type: "array",
              items: { type: "string", minLength: 1, maxLength: 256 },
              maxItems: 256,
            },
          },
        },
      },
    },
    async (request, reply) => {
      const appId = await resolveAppId(pool, request.principal, request.params.appId);
      const labels = request.body?.sessionIds?.length ? request.body.sessionIds : null;
      await expireAppPortalTokens(pool, appId, request.body?.expiry ?? 0, labels);
      return reply.code(204).send();
    },
  );
}

/**
 * POST /api/v1/auth/logout: Svix's logout of an app token, here a portal link's token as
 * the bearer. Outside the API-key hook (an API key is not what it takes); a bearer that is
 * no live link is the API's usual 401.
 */
export function registerPortalLogout(app: FastifyInstance, { pool }: Pick<ApiContext, "pool">) {
  app.post(
    "/auth/logout",
    {
      schema: {
        tags: ["portal"],
        summary: "End the portal link whose token is the bearer",
        body: { type: ["object", "null"] },
      },
    },
    async (request, reply) => {
      const match = /^Bearer\s+(\S+)\s*$/i.exec(request.headers.authorization ?? "");
      const token = match?.[1];
      if (
        !token ||
        !isPortalTokenShape(token) ||
        !(await revokePortalTokenByHash(pool, portalSecretHash(token)))
      )
        throw apiError(
          "unauthorized",
          "missing or invalid portal token (Authorization: Bearer <token>)",
        );
      return reply.code(204).send();
    },
  );
}
