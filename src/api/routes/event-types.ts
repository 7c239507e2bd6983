/**
 * /api/v1/event-type: the catalogue of event types (Svix's resource). Any key may read;
 * only admin keys write. DELETE archives (messages keep their event type); ?expunge=true
 * deletes the row.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import {
  archiveEventType,
  deleteEventType,
  type EventTypeFields,
  type EventTypeRow,
  getEventType,
  insertEventType,
  listEventTypes,
  updateEventType,
  upsertEventType,
} from "../../db/queries/event-types.ts";
import type { ApiContext } from "../context.ts";
import { forbidden, notFound } from "../errors.ts";
import { rawMember } from "../json-member.ts";
import { type PageQuery, pageQuerySchema, planPage, toPage } from "../pagination.ts";
import { rawSlots } from "../raw-json.ts";
import { eventTypePageResponse } from "../response-schemas.ts";
import { iso, nameSchema } from "../schemas.ts";
import { conflictOnUnique } from "../unique-violation.ts";

type EventTypeIn = Partial<{
  name: string;
  description: string;
  archived: boolean;
  deprecated: boolean;
  schemas: unknown;
  groupName: string | null;
  featureFlags: string[] | null;
}>;

const NAME = nameSchema;
const properties = {
  description: { type: "string", maxLength: 4096 },
  archived: { type: "boolean" },
  deprecated: { type: "boolean" },
  schemas: { type: ["object", "null"] },
  groupName: { type: ["string", "null"], maxLength: 256 },
  featureFlags: { type: ["array", "null"], items: NAME, maxItems: 32 },
} as const;
const params = { type: "object", properties: { name: NAME }, required: ["name"] } as const;

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
  if (request.principal.role !== "admin") throw forbidden("only admin keys can change event types");
}

/** The schemas' JSON text as sent (or null / undefined when absent). */
const schemasText = (request: FastifyRequest, body: EventTypeIn) =>
  body.schemas === undefined
    ? undefined
    : body.schemas === null
      ? null
      : (rawMember(request.rawBody ?? "", "schemas") ?? JSON.stringify(body.schemas));

/** Every field of a create or PUT: the body's, or its default. */
const fieldsOf = (request: FastifyRequest, name: string, b: EventTypeIn): EventTypeFields => ({
  name,
  description: b.description ?? "",
  archived: b.archived ?? false,
  deprecated: b.deprecated ?? false,
  schemas: schemasText(request, b) ?? null,
  group_name: b.groupName ?? null,
  feature_flags: b.featureFlags ?? null,
});

const nameTaken = conflictOnUnique("an event type with this name exists");

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
        response: { 200: eventTypePageResponse },
      },
    },
    async (request, reply) => {
      const plan = planPage(request.query, "ascending");
      const rows = await listEventTypes(pool, request.query.include_archived ?? false, plan.window);
      const slots = rawSlots();
      return reply.type("application/json").send(
        slots.stringify(
          toPage(
            rows,
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
      const row = await insertEventType(
        pool,
        fieldsOf(request, request.body.name!, request.body),
      ).catch(nameTaken);
      reply.code(201);
      return send(reply, row);
    },
  );

  app.get<{ Params: { name: string } }>(
    "/event-type/:name",
    { schema: { tags: ["event-type"], params } },
    async (request, reply) => {
      const row = await getEventType(pool, request.params.name);
      if (!row) throw notFound("event type");
      return send(reply, row);
    },
  );

  // PUT replaces (and creates when missing); PATCH changes only the fields given.
  const upsert = async (
    request: FastifyRequest<{ Params: { name: string }; Body: EventTypeIn }>,
    reply: FastifyReply,
  ) => {
    adminOnly(request);
    const { row, created } = await upsertEventType(
      pool,
      fieldsOf(request, request.params.name, request.body),
    );
    if (created) reply.code(201);
    return send(reply, row);
  };

  const patch = async (
    request: FastifyRequest<{ Params: { name: string }; Body: EventTypeIn }>,
    reply: FastifyReply,
  ) => {
    adminOnly(request);
    const b = request.body;
    const row = await updateEventType(pool, request.params.name, {
      description: b.description,
      archived: b.archived,
      deprecated: b.deprecated,
      schemas: schemasText(request, b),
      group_name: b.groupName,
      feature_flags: b.featureFlags,
    });
    if (!row) throw notFound("event type");
    return send(reply, row);
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
      const found = request.query.expunge
        ? await deleteEventType(pool, request.params.name)
        : await archiveEventType(pool, request.params.name);
      if (!found) throw notFound("event type");
      return reply.code(204).send();
    },
  );
}
