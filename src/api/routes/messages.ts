/** /api/v1/app/{appId}/msg: accepting and reading messages. */
import type { FastifyInstance } from "fastify";
import { ApiError, badRequest, notFound } from "../../errors.ts";
import { ID_PREFIX } from "../../ids.ts";
import { makeEnqueueBatcher } from "../../queue/enqueue-batcher.ts";
import { timeInput } from "../body-check.ts";
import { rawMember } from "../json-member.ts";
import { type PageQuery, pageQuerySchema, planPage, toPage } from "../pagination.ts";
import { type RawSlots, rawSlots } from "../raw-json.ts";
import { resolveAppId } from "../resolve.ts";
import { appParams, checkPathUid, iso, nameListSchema } from "../schemas.ts";
import type { ApiContext } from "../server.ts";
import { type AppIn, appIn, insertApp } from "./applications.ts";

interface MessageRow {
  id: string;
  event_type: string;
  event_id: string | null;
  payload: string;
  channels: string[] | null;
  tags: string[] | null;
  created_at: Date;
}

interface MessageIn {
  application?: AppIn;
  eventType: string;
  payload: Record<string, unknown>;
  eventId?: string | null;
  channels?: string[] | null;
  tags?: string[] | null;
  deliverAt?: string | null;
  payloadRetentionPeriod?: number | null;
  payloadRetentionHours?: number | null;
}

const messageIn = {
  type: "object",
  additionalProperties: false,
  required: ["eventType", "payload"],
  properties: {
    eventType: { type: "string", minLength: 1, maxLength: 256, pattern: "^[a-zA-Z0-9\\-_.]+$" },
    payload: { type: "object" },
    eventId: { type: ["string", "null"], minLength: 1, maxLength: 256 },
    channels: { ...nameListSchema, maxItems: 10 },
    tags: { ...nameListSchema, maxItems: 10 },
    deliverAt: { type: ["string", "null"], format: "date-time" },
    // Svix: keep the message (and its payload) this many days, or hours; one or the other.
    // The configured retention (HOOKRELAY_RETENTION_PAYLOAD_MS) stays the upper bound.
    payloadRetentionPeriod: { type: ["integer", "null"], minimum: 1, maximum: 3650 },
    payloadRetentionHours: { type: ["integer", "null"], minimum: 1, maximum: 87600 },
    // Svix: create the application alongside when the path names none that exists
    application: { ...appIn, type: ["object", "null"] },
  },
} as const;

const contentQuery = { with_content: { type: "boolean", default: true } } as const;

export const COLUMNS = "id, event_type, event_id, payload, channels, tags, created_at";

const HOUR_MS = 3_600_000;

/** Svix's per-message payload retention, in ms; null when the request sets none. */
function retentionInput(
  days: number | null | undefined,
  hours: number | null | undefined,
): number | null {
  if (days != null && hours != null) {
    throw badRequest(
      "payloadRetentionPeriod and payloadRetentionHours are mutually exclusive: set one",
    );
  }
  if (days != null) return days * 24 * HOUR_MS;
  if (hours != null) return hours * HOUR_MS;
  return null;
}

/** A message as Svix shapes it; the payload is embedded raw through `slots`. */
export function messageOut(r: MessageRow, slots: RawSlots, withContent: boolean) {
  return {
    id: r.id,
    eventType: r.event_type,
    eventId: r.event_id,
    channels: r.channels,
    tags: r.tags,
    timestamp: iso(r.created_at),
    payload: withContent ? slots.raw(r.payload) : {},
  };
}

export function registerMessageRoutes(app: FastifyInstance, { pool, config }: ApiContext): void {
  const batcher = makeEnqueueBatcher(pool, config.delivery.maxAttempts);
  app.post<{ Params: { appId: string }; Body: MessageIn; Querystring: { with_content: boolean } }>(
    "/app/:appId/msg",
    {
      schema: {
        tags: ["message"],
        params: appParams,
        body: messageIn,
        querystring: { type: "object", properties: contentQuery },
      },
    },
    async (request, reply) => {
      const body = request.body;
      const appId = await resolveAppId(pool, request.principal, request.params.appId).catch(
        async (err) => {
          if (
            !body.application ||
            !(err instanceof ApiError) ||
            err.status !== 404 ||
            request.principal.role !== "admin"
          ) {
            throw err;
          }
          const created = await insertApp(pool, {
            ...body.application,
            uid: body.application.uid ?? checkPathUid(request.params.appId),
          });
          return created.id;
        },
      );
      // The payload exactly as sent (the body was parsed already, so this cannot fail).
      const payload = rawMember(request.rawBody ?? "", "payload") ?? JSON.stringify(body.payload);
      const deliverAt = timeInput(body.deliverAt, "deliverAt");
      const retentionMs = retentionInput(body.payloadRetentionPeriod, body.payloadRetentionHours);
      const result = await batcher.enqueue({
        appId,
        eventType: body.eventType,
        payload,
        eventId: body.eventId,
        channels: body.channels,
        tags: body.tags,
        deliverAt,
        retentionMs,
      });
      const slots = rawSlots();
      // A new message is answered from what was just written; a repeated eventId with the
      // original message as stored.
      const row: MessageRow = result.created
        ? {
            id: result.messageId,
            event_type: body.eventType,
            event_id: body.eventId ?? null,
            payload,
            channels: body.channels ?? null,
            tags: body.tags ?? null,
            created_at: result.createdAt,
          }
        : (
            await pool.query(`select ${COLUMNS} from messages where id = $1::text`, [
              result.messageId,
            ])
          ).rows[0];
      const out = {
        ...messageOut(row, slots, request.query.with_content),
        deliverAt: iso(deliverAt),
      };
      // A repeated eventId answers with the original message: 200 instead of 202.
      reply.code(result.created ? 202 : 200).type("application/json");
      return reply.send(slots.stringify(out));
    },
  );

  app.get<{
    Params: { appId: string };
    Querystring: PageQuery & {
      with_content: boolean;
      event_types?: string[];
      channel?: string;
      tag?: string;
      before?: string;
      after?: string;
    };
  }>(
    "/app/:appId/msg",
    {
      schema: {
        tags: ["message"],
        params: appParams,
        querystring: {
          type: "object",
          properties: {
            ...pageQuerySchema,
            ...contentQuery,
            event_types: { type: "array", items: { type: "string", maxLength: 256 }, maxItems: 64 },
            channel: { type: "string", maxLength: 256 },
            tag: { type: "string", maxLength: 256 },
            before: { type: "string", format: "date-time" },
            after: { type: "string", format: "date-time" },
          },
        },
      },
    },
    async (request, reply) => {
      const appId = await resolveAppId(pool, request.principal, request.params.appId);
      const q = request.query;
      const plan = planPage(q, "descending", ID_PREFIX.message);
      // event_types arrives comma-joined from the svix client.
      const types = q.event_types?.flatMap((t) => t.split(",")).filter(Boolean);
      const { rows } = await pool.query(
        `select ${COLUMNS} from messages
         where app_id = $1::text and ($2::text is null or id ${plan.op} $2::text)
           and ($4::text[] is null or event_type = any ($4::text[]))
           and ($5::text is null or $5::text = any (channels))
           and ($6::timestamptz is null or created_at < $6::timestamptz)
           and ($7::timestamptz is null or created_at > $7::timestamptz)
           and ($8::text is null or $8::text = any (tags))
         order by id ${plan.direction} limit $3::integer`,
        [
          appId,
          plan.cursor,
          plan.limit + 1,
          types?.length ? types : null,
          q.channel ?? null,
          timeInput(q.before, "before"),
          timeInput(q.after, "after"),
          q.tag ?? null,
        ],
      );
      const slots = rawSlots();
      const page = toPage(
        rows as MessageRow[],
        plan,
        (r) => r.id,
        (r) => messageOut(r, slots, q.with_content),
      );
      return reply.type("application/json").send(slots.stringify(page));
    },
  );

  app.get<{ Params: { appId: string; msgId: string }; Querystring: { with_content: boolean } }>(
    "/app/:appId/msg/:msgId",
    {
      schema: {
        tags: ["message"],
        params: {
          type: "object",
          properties: { appId: { type: "string" }, msgId: { type: "string", maxLength: 256 } },
          required: ["appId", "msgId"],
        },
        querystring: { type: "object", properties: contentQuery },
      },
    },
    async (request, reply) => {
      const appId = await resolveAppId(pool, request.principal, request.params.appId);
      const row = await findMessage(pool, appId, request.params.msgId);
      const slots = rawSlots();
      return reply
        .type("application/json")
        .send(slots.stringify(messageOut(row, slots, request.query.with_content)));
    },
  );
}

/** A message of the app by id or by the producer's eventId; 404 if absent. */
export async function findMessage(
  db: ApiContext["pool"],
  appId: string,
  idOrEventId: string,
): Promise<MessageRow> {
  const { rows } = await db.query(
    `select ${COLUMNS} from messages where app_id = $1::text and (id = $2::text or event_id = $2::text)
     order by (id = $2::text) desc limit 1`,
    [appId, idOrEventId],
  );
  if (!rows[0]) throw notFound("message");
  return rows[0];
}
