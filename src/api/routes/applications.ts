/** /api/v1/app: applications (tenants). */
import type { FastifyInstance } from "fastify";
import { type Queryable, withRetriedTransaction } from "../../db/pool.ts";
import {
  type AppChanges,
  type AppRow,
  deleteApp,
  getApp,
  getAppByUid,
  insertApp,
  listApps,
  updateApp,
} from "../../db/queries/applications.ts";
import { endpointSubjectsOfApp } from "../../db/queries/endpoints.ts";
import { OperationalEvent } from "../../domain/operational-events.ts";
import { ID_PREFIX, newId } from "../../ids.ts";
import { emitEndpointEvent } from "../../ops/operational-webhook.ts";
import type { ApiContext } from "../context.ts";
import { checkPool, egressPoolSchema } from "../egress-input.ts";
import { forbidden, isNotFound, notFound } from "../errors.ts";
import { type PageQuery, pageQuerySchema, planPage, toPage } from "../pagination.ts";
import { resolveAppId } from "../resolve.ts";
import { appParams, checkPathUid, iso, metadataSchema, uidSchema } from "../schemas.ts";
import { conflictOnUnique } from "../unique-violation.ts";

export interface AppIn {
  name?: string;
  uid?: string | null;
  throttleRate?: number | null;
  rateLimit?: number | null;
  metadata?: Record<string, string>;
  egressPool?: string | null;
}

const appProperties = {
  name: { type: "string", minLength: 1, maxLength: 256 },
  uid: uidSchema,
  throttleRate: { type: ["integer", "null"], minimum: 1, maximum: 1_000_000 },
  rateLimit: { type: ["integer", "null"], minimum: 1, maximum: 1_000_000 },
  metadata: metadataSchema,
  // the pool its endpoints go out through unless they name their own (docs/egress.md)
  egressPool: {
    ...egressPoolSchema,
    description: `${egressPoolSchema.description}. Its endpoints use it unless they name their own; a PUT that leaves it out keeps it.`,
  },
} as const;
export const appIn = {
  type: "object",
  additionalProperties: false,
  properties: appProperties,
  required: ["name"],
} as const;
const appPatch = {
  type: "object",
  additionalProperties: false,
  properties: appProperties,
} as const;

export const appOut = (r: AppRow) => ({
  id: r.id,
  uid: r.uid,
  name: r.name,
  throttleRate: r.rate_limit,
  rateLimit: r.rate_limit,
  metadata: r.metadata,
  egressPool: r.egress_pool,
  createdAt: iso(r.created_at),
  updatedAt: iso(r.updated_at),
});

const uidTaken = conflictOnUnique("an application with this uid already exists");

/** Svix's throttleRate, or rateLimit (its older name); undefined when neither is given. */
const rateOf = (body: AppIn) =>
  body.throttleRate !== undefined ? body.throttleRate : body.rateLimit;

/** Creates an app from a request body (name required by the schema); 409 if its uid is taken. */
export function createApp(db: Queryable, body: AppIn): Promise<AppRow> {
  return insertApp(db, {
    id: newId(ID_PREFIX.app),
    uid: body.uid ?? null,
    name: body.name!,
    rateLimit: rateOf(body) ?? null,
    metadata: body.metadata ?? {},
    egressPool: body.egressPool ?? null,
  }).catch(uidTaken);
}

/**
 * The columns a PUT (`replace`) or PATCH changes. A PUT gives every field its value or
 * default, except the uid: upsert-by-uid callers (the svix client) leave it out and keep it.
 */
function changesOf(body: AppIn, replace: boolean): AppChanges {
  const rate = rateOf(body);
  return {
    name: body.name,
    uid: body.uid,
    rateLimit: replace ? (rate ?? null) : rate,
    metadata: replace ? (body.metadata ?? {}) : body.metadata,
    // (a PUT that leaves it out keeps it: the svix client's upsert cannot send it)
    egressPool: body.egressPool,
  };
}

export function registerApplicationRoutes(
  app: FastifyInstance,
  { pool, operational, config }: ApiContext,
): void {
  /** The body, its egress pool checked against the server's (422 unknown_egress_pool). */
  const checked = (body: AppIn): AppIn => {
    if (body.egressPool !== undefined) checkPool(body.egressPool, config.egress);
    return body;
  };
  const update = async (id: string, body: AppIn, replace: boolean) => {
    checked(body);
    const row = await updateApp(pool, id, changesOf(body, replace)).catch(uidTaken);
    if (!row) throw notFound("application");
    return appOut(row);
  };

  app.get<{ Querystring: PageQuery }>(
    "/app",
    {
      schema: {
        tags: ["application"],
        querystring: { type: "object", properties: pageQuerySchema },
      },
    },
    async (request) => {
      const plan = planPage(request.query, "ascending", ID_PREFIX.app);
      const scoped = request.principal.role === "app" ? request.principal.appId : null;
      const rows = await listApps(pool, plan.window, scoped);
      return toPage(rows, plan, (r) => r.id, appOut);
    },
  );

  app.post<{ Body: AppIn; Querystring: { get_if_exists?: boolean } }>(
    "/app",
    {
      schema: {
        tags: ["application"],
        body: appIn,
        querystring: { type: "object", properties: { get_if_exists: { type: "boolean" } } },
      },
    },
    async (request, reply) => {
      if (request.principal.role !== "admin") {
        throw forbidden("only admin keys can create applications");
      }
      if (request.query.get_if_exists && request.body.uid) {
        const existing = await getAppByUid(pool, request.body.uid);
        if (existing) return reply.code(200).send(appOut(existing));
      }
      reply.code(201);
      return appOut(await createApp(pool, checked(request.body)));
    },
  );

  app.get<{ Params: { appId: string } }>(
    "/app/:appId",
    { schema: { tags: ["application"], params: appParams } },
    async (request) => {
      const row = await getApp(
        pool,
        await resolveAppId(pool, request.principal, request.params.appId),
      );
      if (!row) throw notFound("application");
      return appOut(row);
    },
  );

  app.put<{ Params: { appId: string }; Body: AppIn }>(
    "/app/:appId",
    { schema: { tags: ["application"], params: appParams, body: appIn } },
    async (request, reply) => {
      let id: string;
      try {
        id = await resolveAppId(pool, request.principal, request.params.appId);
      } catch (err) {
        if (!isNotFound(err) || request.principal.role !== "admin") throw err;
        // Upsert: an unknown id or uid creates the app, with the path segment as its uid.
        reply.code(201);
        return appOut(
          await createApp(pool, {
            ...checked(request.body),
            uid: request.body.uid ?? checkPathUid(request.params.appId),
          }),
        );
      }
      return update(id, request.body, true);
    },
  );

  app.patch<{ Params: { appId: string }; Body: AppIn }>(
    "/app/:appId",
    { schema: { tags: ["application"], params: appParams, body: appPatch } },
    async (request) =>
      update(
        await resolveAppId(pool, request.principal, request.params.appId),
        request.body,
        false,
      ),
  );

  app.delete<{ Params: { appId: string } }>(
    "/app/:appId",
    { schema: { tags: ["application"], params: appParams } },
    async (request, reply) => {
      const appId = await resolveAppId(pool, request.principal, request.params.appId);
      // each of its endpoints raises endpoint.deleted, in the transaction of the deletion
      // (docs/operational-webhooks.md); the events are queued while the app still exists
      await withRetriedTransaction(pool, async (client) => {
        for (const endpoint of await endpointSubjectsOfApp(client, appId))
          await emitEndpointEvent(client, operational, OperationalEvent.endpointDeleted, endpoint);
        await deleteApp(client, appId);
      });
      return reply.code(204).send();
    },
  );
}
