/**
 * /api/v1/event-type: the catalogue of event types (Svix's resource). Any key may read;
 * only admin keys write. DELETE archives (messages keep their event type); ?expunge=true
 * deletes the row.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { ApiError, conflict, notFound } from "../../errors.ts";
import { rawMember } from "../json-member.ts";
import { type PageQuery, pageQuerySchema, planPage, toPage } from "../pagination.ts";
import { rawSlots } from "../raw-json.ts";
import { iso } from "../schemas.ts";
import type { ApiContext } from "../server.ts";

interface EventTypeRow {
  name: string;
  description: string;
  archived: boolean;
  deprecated: boolean;
  schemas: string | null;
  group_name: string | null;
  feature_flags: string[] | null;
  created_at: Date;
  updated_at: Date;
}

type EventTypeIn = Partial<{
  name: string;
  description: string;
  archived: boolean;
  deprecated: boolean;
  schemas: unknown;
  groupName: string | null;
  featureFlags: string[] | null;
}>;

const NAME = {
  type: "string",
  minLength: 1,
  maxLength: 256,
  pattern: "^[a-zA-Z0-9\\-_.]+$",
} as const;
const properties = {
  description: { type: "string", maxLength: 4096 },
  archived: { type: "boolean" },
  deprecated: { type: "boolean" },
  schemas: { type: ["object", "null"] },
  groupName: { type: ["string", "null"], maxLength: 256 },
  featureFlags: { type: ["array", "null"], items: NAME, maxItems: 32 },
} as const;
const params = { type: "object", properties: { name: NAME }, required: ["name"] } as const;

const COLUMNS =
  "name, description, archived, deprecated, schemas, group_name, feature_flags, created_at, updated_at";

function out(r: EventTypeRow, slots: ReturnType<typeof rawSlots>) {
  return {
    name: r.name,
    description: r.description,
    archived: r.archived,
    deprecated: r.deprecated,
    schemas: r.schemas === null ? null : slots.raw(r.schemas),
    groupName: r.group_name,
    featureFlags: r.feature_flags,
    createdAt: iso(r.created_at),
    updatedAt: iso(r.updated_at),
  };
}

function adminOnly(request: FastifyRequest): void {
  if (request.principal.role !== "admin")
    throw new ApiError(403, "forbidden", "only admin keys can change event types");
}

/** The schemas' JSON text as sent (or null / undefined when absent). */
const schemasText = (request: FastifyRequest, body: EventTypeIn) =>
  body.schemas === undefined
    ? undefined
    : body.schemas === null
      ? null
      : (rawMember(request.rawBody ?? "", "schemas") ?? JSON.stringify(body.schemas));

export function registerEventTypeRoutes(app: FastifyInstance, { pool }: ApiContext): void {
  const send = (reply: FastifyReply, row: EventTypeRow) => {
    const slots = rawSlots();
    return reply.type("application/json").send(slots.stringify(out(row, slots)));
  };

  app.get<{ Querystring: PageQuery & { include_archived?: boolean } }>(
    "/event-type",
    {
      schema: {
        tags: ["event-type"],
        querystring: {
          type: "object",
          properties: {
            ...pageQuerySchema,
            include_archived: { type: "boolean" },
            with_content: { type: "boolean" },
          },
        },
      },
    },
    async (request, reply) => {
      const plan = planPage(request.query, "ascending");
      const { rows } = await pool.query(
        `select ${COLUMNS} from event_types
         where ($1::text is null or name ${plan.op} $1::text) and ($3::boolean or not archived)
         order by name ${plan.direction} limit $2::integer`,
        [plan.cursor, plan.limit + 1, request.query.include_archived ?? false],
      );
      const slots = rawSlots();
      return reply.type("application/json").send(
        slots.stringify(
          toPage(
            rows as EventTypeRow[],
            plan,
            (r) => r.name,
            (r) => out(r, slots),
          ),
        ),
      );
    },
  );

  app.post<{ Body: EventTypeIn }>(
    "/event-type",
    {
      schema: {
        tags: ["event-type"],
        body: {
          type: "object",
          additionalProperties: false,
          required: ["name", "description"],
          properties: { name: NAME, ...properties },
        },
      },
    },
    async (request, reply) => {
      adminOnly(request);
      const b = request.body;
      const { rows } = await pool
        .query(
          `insert into event_types (name, description, archived, deprecated, schemas, group_name, feature_flags)
           values ($1::text, $2::text, $3::boolean, $4::boolean, $5::text, $6::text, $7::text[]) returning ${COLUMNS}`,
          [
            b.name,
            b.description,
            b.archived ?? false,
            b.deprecated ?? false,
            schemasText(request, b) ?? null,
            b.groupName ?? null,
            b.featureFlags ?? null,
          ],
        )
        .catch((err) => {
          if ((err as { code?: string }).code === "23505")
            throw conflict("an event type with this name exists");
          throw err;
        });
      reply.code(201);
      return send(reply, rows[0]);
    },
  );

  app.get<{ Params: { name: string } }>(
    "/event-type/:name",
    { schema: { tags: ["event-type"], params } },
    async (request, reply) => {
      const { rows } = await pool.query(
        `select ${COLUMNS} from event_types where name = $1::text`,
        [request.params.name],
      );
      if (!rows[0]) throw notFound("event type");
      return send(reply, rows[0]);
    },
  );

  // PUT replaces (and creates when missing); PATCH changes only the fields given.
  const upsert = async (
    request: FastifyRequest<{ Params: { name: string }; Body: EventTypeIn }>,
    reply: FastifyReply,
  ) => {
    adminOnly(request);
    const b = request.body;
    const { rows } = await pool.query(
      `insert into event_types (name, description, archived, deprecated, schemas, group_name, feature_flags)
       values ($1::text, $2::text, $3::boolean, $4::boolean, $5::text, $6::text, $7::text[])
       on conflict (name) do update set
         description = excluded.description, archived = excluded.archived,
         deprecated = excluded.deprecated, schemas = excluded.schemas,
         group_name = excluded.group_name, feature_flags = excluded.feature_flags, updated_at = now()
       returning ${COLUMNS}, (xmax = 0) as created`,
      [
        request.params.name,
        b.description,
        b.archived ?? false,
        b.deprecated ?? false,
        schemasText(request, b) ?? null,
        b.groupName ?? null,
        b.featureFlags ?? null,
      ],
    );
    if (rows[0].created) reply.code(201);
    return send(reply, rows[0]);
  };

  const patch = async (
    request: FastifyRequest<{ Params: { name: string }; Body: EventTypeIn }>,
    reply: FastifyReply,
  ) => {
    adminOnly(request);
    const b = request.body;
    const schemas = schemasText(request, b);
    const { rows } = await pool.query(
      `update event_types set
         description = coalesce($2::text, description),
         archived = coalesce($3::boolean, archived),
         deprecated = coalesce($4::boolean, deprecated),
         schemas = case when $8::boolean then $5::text else schemas end,
         group_name = case when $9::boolean then $6::text else group_name end,
         feature_flags = case when $10::boolean then $7::text[] else feature_flags end,
         updated_at = now()
       where name = $1::text
       returning ${COLUMNS}`,
      [
        request.params.name,
        b.description ?? null,
        b.archived ?? null,
        b.deprecated ?? null,
        schemas ?? null,
        b.groupName ?? null,
        b.featureFlags ?? null,
        schemas !== undefined,
        b.groupName !== undefined,
        b.featureFlags !== undefined,
      ],
    );
    if (!rows[0]) throw notFound("event type");
    return send(reply, rows[0]);
  };

  app.put<{ Params: { name: string }; Body: EventTypeIn }>(
    "/event-type/:name",
    {
      schema: {
        tags: ["event-type"],
        params,
        body: {
          type: "object",
          additionalProperties: false,
          required: ["description"],
          properties,
        },
      },
    },
    upsert,
  );
  app.patch<{ Params: { name: string }; Body: EventTypeIn }>(
    "/event-type/:name",
    {
      schema: {
        tags: ["event-type"],
        params,
        body: { type: "object", additionalProperties: false, properties },
      },
    },
    patch,
  );

  app.delete<{ Params: { name: string }; Querystring: { expunge?: boolean } }>(
    "/event-type/:name",
    {
      schema: {
        tags: ["event-type"],
        params,
        querystring: { type: "object", properties: { expunge: { type: "boolean" } } },
      },
    },
    async (request, reply) => {
      adminOnly(request);
      const { rowCount } = request.query.expunge
        ? await pool.query("delete from event_types where name = $1::text", [request.params.name])
        : await pool.query(
            "update event_types set archived = true, updated_at = now() where name = $1::text",
            [request.params.name],
          );
      if (rowCount === 0) throw notFound("event type");
      return reply.code(204).send();
    },
  );
}
