/**
 * /api/v1/api-keys: admin keys manage keys. A key is shown once, at creation; listings
 * never include it. Revocation takes effect on the next request.
 *   POST   /api-keys          { role: "admin" | "app", appId? (id or uid), name? }
 *   GET    /api-keys          ?app_id=
 *   DELETE /api-keys/{keyId}
 */
import type { FastifyInstance, FastifyRequest } from "fastify";
import { type ApiKeyRow, listApiKeys, revokeApiKey } from "../../db/queries/api-keys.ts";
import { createApiKey } from "../auth.ts";
import type { ApiContext } from "../context.ts";
import { badRequest, forbidden, notFound } from "../errors.ts";
import { resolveAppId } from "../resolve.ts";
import { iso } from "../schemas.ts";

function adminOnly(request: FastifyRequest): void {
  if (request.principal.role !== "admin") throw forbidden("only admin keys can manage API keys");
}

const keyOut = (r: ApiKeyRow) => ({
  id: r.id,
  name: r.name,
  role: r.role,
  appId: r.app_id,
  createdAt: iso(r.created_at),
  revokedAt: iso(r.revoked_at),
});

export function registerApiKeyRoutes(app: FastifyInstance, { pool }: ApiContext): void {
  app.post<{ Body: { role: "admin" | "app"; appId?: string; name?: string } }>(
    "/api-keys",
    {
      schema: {
        tags: ["api-keys"],
        body: {
          type: "object",
          additionalProperties: false,
          required: ["role"],
          properties: {
            role: { type: "string", enum: ["admin", "app"] },
            appId: { type: "string", minLength: 1, maxLength: 256 },
            name: { type: "string", maxLength: 256 },
          },
        },
      },
    },
    async (request, reply) => {
      adminOnly(request);
      const { role, appId, name = "" } = request.body;
      if (role === "app" && !appId) throw badRequest("an app key needs appId");
      if (role === "admin" && appId)
        throw badRequest("an admin key belongs to no app; leave out appId");
      const created =
        role === "app"
          ? await createApiKey(
              pool,
              { role, appId: await resolveAppId(pool, request.principal, appId!) },
              name,
            )
          : await createApiKey(pool, { role }, name);
      reply.code(201);
      return { ...keyOut(created), key: created.key };
    },
  );

  app.get<{ Querystring: { app_id?: string } }>(
    "/api-keys",
    {
      schema: {
        tags: ["api-keys"],
        querystring: { type: "object", properties: { app_id: { type: "string", maxLength: 256 } } },
      },
    },
    async (request) => {
      adminOnly(request);
      const appId = request.query.app_id
        ? await resolveAppId(pool, request.principal, request.query.app_id)
        : null;
      return { data: (await listApiKeys(pool, appId)).map(keyOut) };
    },
  );

  app.delete<{ Params: { keyId: string } }>(
    "/api-keys/:keyId",
    {
      schema: {
        tags: ["api-keys"],
        params: {
          type: "object",
          properties: { keyId: { type: "string", maxLength: 256 } },
          required: ["keyId"],
        },
      },
    },
    async (request, reply) => {
      adminOnly(request);
      if (!(await revokeApiKey(pool, request.params.keyId))) throw notFound("API key");
      return reply.code(204).send();
    },
  );
}
