/**
 * Attempts and per-endpoint delivery state of messages, and resend.
 *   GET  /app/{appId}/attempt/msg/{msgId}            attempts of a message
 *   GET  /app/{appId}/attempt/endpoint/{endpointId}  attempts to an endpoint
 *   GET  /app/{appId}/msg/{msgId}/attempt/{id}       one attempt
 *   GET  /app/{appId}/msg/{msgId}/endpoint           the message's delivery to each endpoint
 *   POST /app/{appId}/msg/{msgId}/endpoint/{endpointId}/resend
 */

import type { FastifyInstance } from "fastify";
import {
  type AttemptFilter,
  type AttemptRow,
  getAttempt,
  listAttempts,
} from "../../db/queries/attempts.ts";
import {
  listEndpointMessages,
  listMessageDeliveries,
  resendDelivery,
} from "../../db/queries/deliveries.ts";
import { isExpunged } from "../../domain/expunged-payload.ts";
import { ID_PREFIX } from "../../ids.ts";
import type { PublicIds } from "../../ids-public.ts";
import { publicIdsOf } from "../../ids-public-key.ts";
import type { Redactor } from "../../security/redact.ts";
import type { Principal } from "../auth.ts";
import { timeInput } from "../body-check.ts";
import type { ApiContext } from "../context.ts";
import { conflict, notFound } from "../errors.ts";
import { type PageQuery, pageQuerySchema, planPage, toPage } from "../pagination.ts";
import { cursorKeyOf, rowKeyOf } from "../public-id-input.ts";
import { rawSlots } from "../raw-json.ts";
import { resolveAppId, resolveEndpointId } from "../resolve.ts";
import { attemptPageResponse, messageDeliveriesResponse } from "../response-schemas.ts";
import { iso } from "../schemas.ts";
import { findMessageOr404, messageOut } from "./messages.ts";

/** Svix's MessageStatus numbers. */
const MessageStatus = { success: 0, pending: 1, fail: 2, sending: 3, canceled: 4 } as const;
const DELIVERY_TO_SVIX: Record<string, keyof typeof MessageStatus> = {
  delivered: "success",
  pending: "pending",
  failed: "pending",
  in_flight: "sending",
  dead_letter: "fail",
  canceled: "canceled",
};

/**
 * An attempt as the API shows it. The worker stored its URL, response and error masked
 * already (worker/record-attempt.ts); they are masked again on the way out, so a field
 * added to HOOKRELAY_SENSITIVE_FIELDS later covers the attempts stored before.
 */
const attemptOut = (redactor: Redactor, ids: PublicIds) => (r: AttemptRow) => ({
  id: ids.format("attempt", r.id),
  msgId: r.message_id,
  endpointId: r.endpoint_id,
  url: redactor.url(r.url),
  response: r.response_body ? redactor.text(r.response_body) : "",
  responseStatusCode: r.status_code ?? 0,
  responseDurationMs: r.latency_ms,
  status: r.outcome === "success" ? MessageStatus.success : MessageStatus.fail,
  statusText: r.outcome === "success" ? "success" : "fail",
  // Svix's MessageAttemptTriggerType: a resend, requeue or replay (docs/recovery.md) is manual
  triggerType: r.trigger === "manual" || r.trigger === "replay" ? 1 : 0,
  timestamp: iso(r.started_at),
  attemptNumber: r.attempt_number,
  errorKind: r.error_kind,
  error: r.error === null ? null : redactor.text(r.error),
  /**
   * hookrelay's own: what a broker destination said (docs/destinations.md: exchange and
   * confirm, or subject, stream and sequence); null for HTTP, whose status is above
   */
  detail: r.detail,
  /** hookrelay's own: 'scheduled', 'manual' (resend, requeue) or 'replay' (a background task) */
  trigger: r.trigger,
});

const str = { type: "string", minLength: 1, maxLength: 256 } as const;
const params = (...names: string[]) => ({
  type: "object",
  properties: Object.fromEntries(names.map((n) => [n, str])),
  required: names,
});
export const attemptQuery = {
  type: "object",
  properties: {
    ...pageQuerySchema,
    status: { type: "integer", enum: [0, 1, 2, 3, 4] },
    endpoint_id: str,
    // Svix's: attempts started before / after this time
    before: { type: "string", format: "date-time" },
    after: { type: "string", format: "date-time" },
    // Svix's: 0 (no response), 100, 200, 300, 400 or 500 (the response status's hundred)
    status_code_class: { type: "integer", enum: [0, 100, 200, 300, 400, 500] },
    // Svix's: attempts of messages of these event types (comma-joined or repeated), in
    // this channel
    event_types: { type: "array", items: str, maxItems: 64 },
    channel: str,
  },
} as const;

export type AttemptQuery = PageQuery & {
  status?: number;
  endpoint_id?: string;
  before?: string;
  after?: string;
  status_code_class?: number;
  event_types?: string[];
  channel?: string;
};

/** The filter an attempt list's query asks for, beside its message or endpoint. */
export function attemptFilterOf(
  filter: { messageId?: string; endpointId?: string },
  q: Omit<AttemptQuery, keyof PageQuery>,
): AttemptFilter {
  // Svix's status: 0 success, 2 fail; pending (1) and sending (3) are never an attempt's
  const outcome =
    q.status === undefined
      ? null
      : q.status === 0
        ? "success"
        : q.status === 2
          ? "failure"
          : "none";
  const types = q.event_types?.flatMap((t) => t.split(",")).filter(Boolean);
  return {
    messageId: filter.messageId ?? null,
    endpointId: filter.endpointId ?? null,
    outcome,
    before: timeInput(q.before, "before"),
    after: timeInput(q.after, "after"),
    statusCodeClass: q.status_code_class ?? null,
    eventTypes: types?.length ? types : null,
    channel: q.channel ?? null,
  };
}

export function registerAttemptRoutes(
  app: FastifyInstance,
  { pool, config, redactor }: ApiContext,
): void {
  async function attemptPage(
    principal: Principal,
    filter: { messageId?: string; endpointId?: string },
    q: AttemptQuery,
  ) {
    const plan = planPage(q, "descending");
    const cursor =
      plan.cursor === null ? null : await cursorKeyOf(pool, principal, "attempt", plan.cursor);
    const rows = await listAttempts(pool, attemptFilterOf(filter, q), {
      ...plan.window,
      cursor,
    });
    const ids = await publicIdsOf(pool);
    return toPage(rows, plan, (r) => ids.format("attempt", r.id), attemptOut(redactor, ids));
  }

  app.get<{ Params: { appId: string; msgId: string }; Querystring: AttemptQuery }>(
    "/app/:appId/attempt/msg/:msgId",
    {
      schema: {
        tags: ["attempt"],
        params: params("appId", "msgId"),
        querystring: attemptQuery,
        response: { 200: attemptPageResponse },
      },
    },
    async (request) => {
      const appId = await resolveAppId(pool, request.principal, request.params.appId);
      const msg = await findMessageOr404(pool, appId, request.params.msgId);
      const endpointId = request.query.endpoint_id
        ? await resolveEndpointId(pool, appId, request.query.endpoint_id)
        : undefined;
      return attemptPage(request.principal, { messageId: msg.id, endpointId }, request.query);
    },
  );

  app.get<{ Params: { appId: string; endpointId: string }; Querystring: AttemptQuery }>(
    "/app/:appId/attempt/endpoint/:endpointId",
    {
      schema: {
        tags: ["attempt"],
        params: params("appId", "endpointId"),
        querystring: attemptQuery,
        response: { 200: attemptPageResponse },
      },
    },
    async (request) => {
      const appId = await resolveAppId(pool, request.principal, request.params.appId);
      const endpointId = await resolveEndpointId(pool, appId, request.params.endpointId);
      return attemptPage(request.principal, { endpointId }, request.query);
    },
  );

  app.get<{ Params: { appId: string; msgId: string; attemptId: string } }>(
    "/app/:appId/msg/:msgId/attempt/:attemptId",
    { schema: { tags: ["attempt"], params: params("appId", "msgId", "attemptId") } },
    async (request) => {
      const appId = await resolveAppId(pool, request.principal, request.params.appId);
      const msg = await findMessageOr404(pool, appId, request.params.msgId);
      const id = await rowKeyOf(pool, request.principal, "attempt", request.params.attemptId);
      const attempt = await getAttempt(pool, id, msg.id);
      if (!attempt) throw notFound("attempt");
      return attemptOut(redactor, await publicIdsOf(pool))(attempt);
    },
  );

  app.get<{ Params: { appId: string; msgId: string }; Querystring: PageQuery }>(
    "/app/:appId/msg/:msgId/endpoint",
    {
      schema: {
        tags: ["attempt"],
        params: params("appId", "msgId"),
        querystring: { type: "object", properties: pageQuerySchema },
        response: { 200: messageDeliveriesResponse },
      },
    },
    async (request) => {
      const appId = await resolveAppId(pool, request.principal, request.params.appId);
      const msg = await findMessageOr404(pool, appId, request.params.msgId);
      const plan = planPage(request.query, "ascending", ID_PREFIX.endpoint);
      const rows = await listMessageDeliveries(pool, msg.id, plan.window);
      return toPage(
        rows,
        plan,
        (r) => r.id,
        (r) => {
          const status = DELIVERY_TO_SVIX[r.status] ?? "pending";
          return {
            id: r.id,
            uid: r.uid,
            url: redactor.url(r.url),
            description: r.description,
            disabled: r.disabled,
            eventTypes: r.event_types,
            channels: r.channels,
            version: 1,
            createdAt: iso(r.created_at),
            updatedAt: iso(r.updated_at),
            status: MessageStatus[status],
            statusText: status,
            nextAttempt:
              r.status === "pending" || r.status === "failed" ? iso(r.next_attempt_at) : null,
            deliveryStatus: r.status,
            attempts: r.attempt_count,
            lastStatusCode: r.last_status_code,
            lastErrorKind: r.last_error_kind,
            lastError: r.last_error,
            deliveredAt: iso(r.delivered_at),
          };
        },
      );
    },
  );

  app.get<{
    Params: { appId: string; endpointId: string };
    Querystring: PageQuery & {
      status?: number;
      with_content: boolean;
      event_types?: string[];
      channel?: string;
      tag?: string;
      before?: string;
      after?: string;
    };
  }>(
    "/app/:appId/endpoint/:endpointId/msg",
    {
      schema: {
        tags: ["attempt"],
        params: params("appId", "endpointId"),
        querystring: {
          type: "object",
          properties: {
            ...pageQuerySchema,
            status: { type: "integer", enum: [0, 1, 2, 3, 4] },
            with_content: { type: "boolean", default: true },
            event_types: { type: "array", items: str, maxItems: 64 },
            channel: str,
            tag: str,
            before: { type: "string", format: "date-time" },
            after: { type: "string", format: "date-time" },
          },
        },
      },
    },
    async (request, reply) => {
      const appId = await resolveAppId(pool, request.principal, request.params.appId);
      const endpointId = await resolveEndpointId(pool, appId, request.params.endpointId);
      const q = request.query;
      const plan = planPage(q, "descending", ID_PREFIX.message);
      const statuses =
        q.status === undefined
          ? null
          : Object.entries(DELIVERY_TO_SVIX)
              .filter(([, svix]) => MessageStatus[svix] === q.status)
              .map(([delivery]) => delivery);
      const types = q.event_types?.flatMap((t) => t.split(",")).filter(Boolean);
      const rows = await listEndpointMessages(
        pool,
        endpointId,
        {
          statuses,
          eventTypes: types?.length ? types : null,
          channel: q.channel ?? null,
          tag: q.tag ?? null,
          before: timeInput(q.before, "before"),
          after: timeInput(q.after, "after"),
        },
        plan.window,
      );
      const slots = rawSlots();
      const page = toPage(
        rows,
        plan,
        (r) => r.id,
        (r) => {
          const status = DELIVERY_TO_SVIX[r.status] ?? "pending";
          return {
            ...messageOut(r, slots, q.with_content),
            status: MessageStatus[status],
            statusText: status,
            nextAttempt:
              r.status === "pending" || r.status === "failed" ? iso(r.next_attempt_at) : null,
            deliveryStatus: r.status,
          };
        },
      );
      return reply.type("application/json").send(slots.stringify(page));
    },
  );

  app.post<{ Params: { appId: string; msgId: string; endpointId: string } }>(
    "/app/:appId/msg/:msgId/endpoint/:endpointId/resend",
    { schema: { tags: ["attempt"], params: params("appId", "msgId", "endpointId") } },
    async (request, reply) => {
      const appId = await resolveAppId(pool, request.principal, request.params.appId);
      const msg = await findMessageOr404(pool, appId, request.params.msgId);
      const endpointId = await resolveEndpointId(pool, appId, request.params.endpointId);
      // as in Svix: an expunged message's content is gone, so it cannot be sent again
      if (isExpunged(msg.payload))
        throw conflict("the message's payload was expunged: it cannot be resent");
      const resent = await resendDelivery(pool, msg.id, endpointId, config.delivery.maxAttempts);
      if (!resent) {
        // gone meanwhile (retention): a 404, not "in flight"
        await findMessageOr404(pool, appId, msg.id);
        throw conflict(
          "this message is being delivered to the endpoint right now; try again shortly",
        );
      }
      return reply.code(202).send({});
    },
  );
}
