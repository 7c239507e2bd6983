/** /api/v1/app/{appId}/msg: accepting and reading messages. */
import type { FastifyInstance } from "fastify";
import type { Queryable } from "../../db/pool.ts";
import { deliveryCountsOf } from "../../db/queries/message-delivery-counts.ts";
import {
  findMessage,
  getMessage,
  listMessages,
  type MessageRow,
} from "../../db/queries/messages.ts";
import { EXPUNGED_PAYLOAD_SHOWN, isExpunged } from "../../domain/expunged-payload.ts";
import { ID_PREFIX } from "../../ids.ts";
import { makeDisabledTracing } from "../../ops/tracing.ts";
import { timeInput } from "../body-check.ts";
import type { ApiContext } from "../context.ts";
import { badRequest, isNotFound, notFound } from "../errors.ts";
import { rawMember } from "../json-member.ts";
import { type MessageFilterQuery, messageFilterOf, messageFilterQuery } from "../message-filter.ts";
import { type PageQuery, pageQuerySchema, planPage, toPage } from "../pagination.ts";
import { type RawSlots, rawSlots } from "../raw-json.ts";
import { resolveAppId } from "../resolve.ts";
import { messagePageResponse, messageResponse } from "../response-schemas.ts";
import { appParams, checkPathUid, iso, nameListSchema, nameSchema } from "../schemas.ts";
import { type AppIn, appIn, createApp } from "./applications.ts";

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
  orderingKey?: string | null;
}

const messageIn = {
  type: "object",
  additionalProperties: false,
  required: ["eventType", "payload"],
  properties: {
    eventType: nameSchema,
    payload: { type: "object" },
    eventId: { type: ["string", "null"], minLength: 1, maxLength: 256 },
    channels: { ...nameListSchema, maxItems: 10 },
    tags: { ...nameListSchema, maxItems: 10 },
    deliverAt: { type: ["string", "null"], format: "date-time" },
    // hookrelay's: messages with the same key reach each endpoint one at a time, in the
    // order they were accepted (docs/delivery.md, "Ordering")
    orderingKey: { type: ["string", "null"], minLength: 1, maxLength: 128 },
    // Svix: keep the message (and its payload) this many days, or hours; one or the other.
    // The configured retention (HOOKRELAY_RETENTION_PAYLOAD_MS) stays the upper bound.
    payloadRetentionPeriod: { type: ["integer", "null"], minimum: 1, maximum: 3650 },
    payloadRetentionHours: { type: ["integer", "null"], minimum: 1, maximum: 87600 },
    // Svix: create the application alongside when the path names none that exists
    application: { ...appIn, type: ["object", "null"] },
    // Svix: parameters for its transformations, which hookrelay does not have: accepted and
    // ignored, so the body a svix user sends is taken (README.md, Using the svix client);
    // its rawPayload is not sent either: the payload is
    transformationsParams: {},
  },
} as const;

const contentQuery = { with_content: { type: "boolean", default: true } } as const;

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
    // hookrelay's (docs/delivery.md, "Ordering"); Svix has no such field
    orderingKey: r.ordering_key,
    timestamp: iso(r.created_at),
    // an expunged message (routes/message-content.ts) shows Svix's {"expired": true}
    payload: withContent
      ? slots.raw(isExpunged(r.payload) ? EXPUNGED_PAYLOAD_SHOWN : r.payload)
      : {},
  };
}

export function registerMessageRoutes(app: FastifyInstance, ctx: ApiContext): void {
  const { pool, batcher } = ctx;
  const tracing = ctx.tracing ?? makeDisabledTracing();
  app.post<{ Params: { appId: string }; Body: MessageIn; Querystring: { with_content: boolean } }>(
    "/app/:appId/msg",
    {
      schema: {
        tags: ["message"],
        params: appParams,
        body: messageIn,
        querystring: { type: "object", properties: contentQuery },
        // documented, never refused: a malformed one is ignored and counted (docs/telemetry.md)
        headers: {
          type: "object",
          properties: {
            traceparent: {
              type: "string",
              description:
                "The producer's W3C trace context; the message's deliveries continue its trace. A malformed one is ignored (and counted in hookrelay_traceparent_malformed_total).",
            },
          },
        },
      },
    },
    async (request, reply) => {
      const body = request.body;
      const appId = await resolveAppId(pool, request.principal, request.params.appId).catch(
        async (err) => {
          if (!body.application || !isNotFound(err) || request.principal.role !== "admin") {
            throw err;
          }
          const created = await createApp(pool, {
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
      // the producer's trace context (W3C traceparent): a malformed one is ignored, and
      // counted; the ingest span continues it (docs/telemetry.md)
      const span = tracing.startIngest(
        { appId, eventType: body.eventType },
        tracing.producerParent(request.headers.traceparent),
      );
      const result = await batcher
        .enqueue({
          appId,
          eventType: body.eventType,
          payload,
          eventId: body.eventId,
          channels: body.channels,
          tags: body.tags,
          deliverAt,
          retentionMs,
          orderingKey: body.orderingKey,
          traceparent: span.traceparent,
        })
        .catch((err: unknown) => {
          span.end(null, err);
          throw err;
        });
      span.end(result.messageId);
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
            ordering_key: body.orderingKey ?? null,
          }
        : await getMessageOr404(pool, result.messageId);
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
    Querystring: PageQuery & MessageFilterQuery & { with_content: boolean; with_status?: boolean };
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
            ...messageFilterQuery,
            // hookrelay's: each message also shows deliveryStatusCounts (docs/browse.md)
            with_status: { type: "boolean", default: false },
          },
        },
        response: { 200: messagePageResponse },
      },
    },
    async (request, reply) => {
      const appId = await resolveAppId(pool, request.principal, request.params.appId);
      const q = request.query;
      const plan = planPage(q, "descending", ID_PREFIX.message);
      const filter = await messageFilterOf(pool, appId, q);
      const rows = await listMessages(pool, appId, filter, plan.window);
      const counts = q.with_status
        ? await deliveryCountsOf(
            pool,
            rows.map((r) => r.id),
          )
        : null;
      const slots = rawSlots();
      const page = toPage(
        rows,
        plan,
        (r) => r.id,
        (r) => {
          const out = messageOut(r, slots, q.with_content);
          return counts ? { ...out, deliveryStatusCounts: counts.get(r.id) ?? {} } : out;
        },
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
        response: { 200: messageResponse },
      },
    },
    async (request, reply) => {
      const appId = await resolveAppId(pool, request.principal, request.params.appId);
      const row = await findMessageOr404(pool, appId, request.params.msgId);
      const slots = rawSlots();
      return reply
        .type("application/json")
        .send(slots.stringify(messageOut(row, slots, request.query.with_content)));
    },
  );
}

/** A message of the app by id or by the producer's eventId; 404 if absent. */
export async function findMessageOr404(
  db: Queryable,
  appId: string,
  idOrEventId: string,
): Promise<MessageRow> {
  const row = await findMessage(db, appId, idOrEventId);
  if (!row) throw notFound("message");
  return row;
}

async function getMessageOr404(db: Queryable, id: string): Promise<MessageRow> {
  const row = await getMessage(db, id);
  if (!row) throw notFound("message");
  return row;
}
