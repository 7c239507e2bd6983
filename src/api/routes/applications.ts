/** /api/v1/app: applications (tenants). */
import type { FastifyInstance } from "fastify";
import type { Queryable } from "../../db/pool.ts";
import { ApiError, conflict, notFound } from "../../errors.ts";
import { ID_PREFIX, newId } from "../../ids.ts";
import { type PageQuery, pageQuerySchema, planPage, toPage } from "../pagination.ts";
import { resolveAppId } from "../resolve.ts";
import { appParams, checkPathUid, iso, metadataSchema, uidSchema } from "../schemas.ts";
import type { ApiContext } from "../server.ts";

interface AppRow {
  id: string;
  uid: string | null;
  name: string;
  rate_limit: number | null;
  metadata: Record<string, string>;
  created_at: Date;
  updated_at: Date;
}

export interface AppIn {
  name?: string;
  uid?: string | null;
  throttleRate?: number | null;
  rateLimit?: number | null;
  metadata?: Record<string, string>;
}

const appProperties = {
  name: { type: "string", minLength: 1, maxLength: 256 },
  uid: uidSchema,
  throttleRate: { type: ["integer", "null"], minimum: 1, maximum: 1_000_000 },
  rateLimit: { type: ["integer", "null"], minimum: 1, maximum: 1_000_000 },
  metadata: metadataSchema,
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
  createdAt: iso(r.created_at),
  updatedAt: iso(r.updated_at),
});

const COLUMNS = "id, uid, name, rate_limit, metadata, created_at, updated_at";

async function getApp(db: Queryable, id: string): Promise<AppRow> {
  const { rows } = await db.query(`select ${COLUMNS} from applications where id = $1::text`, [id]);
  if (!rows[0]) throw notFound("application");
  return rows[0];
}

function uniqueUid(err: unknown): never {
  if ((err as { code?: string }).code === "23505")
    throw conflict("an application with this uid already exists");
  throw err;
}

export async function insertApp(db: Queryable, body: AppIn): Promise<AppRow> {
  const { rows } = await db
    .query(
      `insert into applications (id, uid, name, rate_limit, metadata)
       values ($1::text, $2::text, $3::text, $4::integer, $5::jsonb) returning ${COLUMNS}`,
      [
        newId(ID_PREFIX.app),
        body.uid ?? null,
        body.name,
        body.throttleRate ?? body.rateLimit ?? null,
        body.metadata ?? {},
      ],
    )
    .catch(uniqueUid);
  return rows[0];
}

async function updateApp(
  db: Queryable,
  id: string,
  body: AppIn,
  replace: boolean,
): Promise<AppRow> {
  const rate = body.throttleRate !== undefined ? body.throttleRate : body.rateLimit;
  // With replace (PUT) every field takes the given value or its default; with PATCH only
  // the fields present change ($6..$9 say which are present).
  const { rows } = await db
    .query(
      `update applications set
         name = case when $6::boolean then $2::text else name end,
         uid = case when $7::boolean then $3::text else uid end,
         rate_limit = case when $8::boolean then $4::integer else rate_limit end,
         metadata = case when $9::boolean then $5::jsonb else metadata end,
         updated_at = now()
       where id = $1::text returning ${COLUMNS}`,
      [
        id,
        body.name ?? null,
        body.uid ?? null,
        rate ?? null,
        body.metadata ?? {},
        body.name !== undefined,
        // a PUT without uid keeps it: upsert-by-uid callers (the svix client) omit it
        body.uid !== undefined,
        replace || rate !== undefined,
        replace || body.metadata !== undefined,
      ],
    )
    .catch(uniqueUid);
  if (!rows[0]) throw notFound("application");
  return rows[0];
}

export function registerApplicationRoutes(app: FastifyInstance, { pool }: ApiContext): void {
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
      const { rows } = await pool.query(
        `select ${COLUMNS} from applications
         where ($1::text is null or id ${plan.op} $1::text) and ($2::text is null or id = $2::text)
         order by id ${plan.direction} limit $3::integer`,
        [plan.cursor, scoped, plan.limit + 1],
      );
      return toPage(rows as AppRow[], plan, (r) => r.id, appOut);
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
        throw new ApiError(403, "forbidden", "only admin keys can create applications");
      }
      if (request.query.get_if_exists && request.body.uid) {
        const { rows } = await pool.query(
          `select ${COLUMNS} from applications where uid = $1::text`,
          [request.body.uid],
        );
        if (rows[0]) return reply.code(200).send(appOut(rows[0]));
      }
      reply.code(201);
      return appOut(await insertApp(pool, request.body));
    },
  );

  app.get<{ Params: { appId: string } }>(
    "/app/:appId",
    { schema: { tags: ["application"], params: appParams } },
    async (request) =>
      appOut(await getApp(pool, await resolveAppId(pool, request.principal, request.params.appId))),
  );

  app.put<{ Params: { appId: string }; Body: AppIn }>(
    "/app/:appId",
    { schema: { tags: ["application"], params: appParams, body: appIn } },
    async (request, reply) => {
      let id: string;
      try {
        id = await resolveAppId(pool, request.principal, request.params.appId);
      } catch (err) {
        if (!(err instanceof ApiError) || err.status !== 404 || request.principal.role !== "admin")
          throw err;
        // Upsert: an unknown id or uid creates the app, with the path segment as its uid.
        reply.code(201);
        return appOut(
          await insertApp(pool, {
            ...request.body,
            uid: request.body.uid ?? checkPathUid(request.params.appId),
          }),
        );
      }
      return appOut(await updateApp(pool, id, request.body, true));
    },
  );

  app.patch<{ Params: { appId: string }; Body: AppIn }>(
    "/app/:appId",
    { schema: { tags: ["application"], params: appParams, body: appPatch } },
    async (request) => {
      const id = await resolveAppId(pool, request.principal, request.params.appId);
      return appOut(await updateApp(pool, id, request.body, false));
    },
  );

  app.delete<{ Params: { appId: string } }>(
    "/app/:appId",
    { schema: { tags: ["application"], params: appParams } },
    async (request, reply) => {
      const id = await resolveAppId(pool, request.principal, request.params.appId);
      // attempts have no foreign key (hot-path inserts); they go with their endpoints here
      await pool.query(
        `with attempts_gone as (
           delete from attempts where endpoint_id in (select id from endpoints where app_id = $1::text)
         )
         delete from applications where id = $1::text`,
        [id],
      );
      return reply.code(204).send();
    },
  );
}
