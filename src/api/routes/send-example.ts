/**
 * POST /app/{appId}/endpoint/{endpointId}/send-example (Svix's endpoint.sendExample; the
 * portal's "send a test event"): a message of the event type with the example from its
 * catalogue schema, delivered to this endpoint only (db/queries/test-messages.ts), tagged
 * "test". `hookrelay.ping` needs no catalogue entry.
 */
import type { FastifyInstance } from "fastify";
import { getEventType } from "../../db/queries/event-types.ts";
import { insertTestMessage } from "../../db/queries/test-messages.ts";
import { ID_PREFIX, newId } from "../../ids.ts";
import type { ApiContext } from "../context.ts";
import { notFound } from "../errors.ts";
import { rawSlots } from "../raw-json.ts";
import { resolveAppId, resolveEndpointId } from "../resolve.ts";
import { nameSchema } from "../schemas.ts";
import { messageOut } from "./messages.ts";

/** The built-in event type of a test without a catalogue entry. */
export const PING_EVENT_TYPE = "hookrelay.ping";

/**
 * The example a catalogue schema carries: Svix keeps schemas by version ({"1": {...}}); the
 * newest version's `examples[index]` (or its `example`), as JSON text; null if none.
 */
export function exampleOf(schemasText: string | null, index = 0): string | null {
  if (schemasText === null) return null;
  let schemas: unknown;
  try {
    schemas = JSON.parse(schemasText);
  } catch {
    return null;
  }
  if (typeof schemas !== "object" || schemas === null) return null;
  const versions = Object.keys(schemas).sort((a, b) => Number(b) - Number(a) || (b < a ? -1 : 1));
  for (const v of versions) {
    const schema = (schemas as Record<string, unknown>)[v] as
      | { examples?: unknown; example?: unknown }
      | undefined;
    if (!schema || typeof schema !== "object") continue;
    const examples = Array.isArray(schema.examples) ? schema.examples : [];
    const example = examples[Math.min(index, examples.length - 1)] ?? schema.example;
    if (example !== undefined && typeof example === "object" && example !== null)
      return JSON.stringify(example);
  }
  return null;
}

export function registerSendExampleRoute(app: FastifyInstance, { pool, config }: ApiContext): void {
  app.post<{
    Params: { appId: string; endpointId: string };
    Body: { eventType: string; exampleIndex?: number };
  }>(
    "/app/:appId/endpoint/:endpointId/send-example",
    {
      schema: {
        tags: ["endpoint"],
        summary: "Send an example message of an event type to this endpoint only",
        params: {
          type: "object",
          properties: {
            appId: { type: "string", maxLength: 256 },
            endpointId: { type: "string", maxLength: 256 },
          },
          required: ["appId", "endpointId"],
        },
        body: {
          type: "object",
          additionalProperties: false,
          required: ["eventType"],
          properties: {
            eventType: nameSchema,
            exampleIndex: { type: "integer", minimum: 0, maximum: 1000 },
          },
        },
      },
    },
    async (request, reply) => {
      const appId = await resolveAppId(pool, request.principal, request.params.appId);
      const endpointId = await resolveEndpointId(pool, appId, request.params.endpointId);
      const { eventType, exampleIndex } = request.body;
      let payload = JSON.stringify({ type: PING_EVENT_TYPE, test: true });
      if (eventType !== PING_EVENT_TYPE) {
        const row = await getEventType(pool, eventType);
        if (!row || row.archived) throw notFound("event type");
        payload =
          exampleOf(row.schemas, exampleIndex) ?? JSON.stringify({ type: eventType, test: true });
      }
      const id = newId(ID_PREFIX.message);
      const createdAt = await insertTestMessage(pool, {
        id,
        appId,
        endpointId,
        eventType,
        payload,
        defaultMaxAttempts: config.delivery.maxAttempts,
      });
      // the endpoint was deleted between the lookup and the write
      if (!createdAt) throw notFound("endpoint");
      const slots = rawSlots();
      const out = messageOut(
        {
          id,
          event_type: eventType,
          event_id: null,
          payload,
          ordering_key: null,
          channels: null,
          tags: ["test"],
          created_at: createdAt,
        },
        slots,
        true,
      );
      return reply.code(202).type("application/json").send(slots.stringify(out));
    },
  );
}
