/**
 * Attempts and per-endpoint delivery state of messages, and resend.
 *   GET  /app/{appId}/attempt/msg/{msgId}            attempts of a message
 *   GET  /app/{appId}/attempt/endpoint/{endpointId}  attempts to an endpoint
 *   GET  /app/{appId}/msg/{msgId}/attempt/{id}       one attempt
 *   GET  /app/{appId}/msg/{msgId}/endpoint           the message's delivery to each endpoint
 *   POST /app/{appId}/msg/{msgId}/endpoint/{endpointId}/resend
 */
import type { FastifyInstance } from "fastify";
import { badRequest, conflict, notFound } from "../../errors.ts";
import { ID_PREFIX } from "../../ids.ts";
import { WORK_CHANNEL } from "../../queue/work-channel.ts";
import { timeInput } from "../body-check.ts";
import { type PageQuery, pageQuerySchema, planPage, toPage } from "../pagination.ts";
import { rawSlots } from "../raw-json.ts";
import { resolveAppId, resolveEndpointId } from "../resolve.ts";
import { iso } from "../schemas.ts";
import type { ApiContext } from "../server.ts";
import { findMessage, messageOut } from "./messages.ts";

const ATTEMPT_PREFIX = "atmpt_";

interface AttemptRow {
  id: number;
  message_id: string;
  endpoint_id: string;
  url: string;
  attempt_number: number;
  trigger: string;
  started_at: Date;
  latency_ms: number;
  outcome: string;
  status_code: number | null;
  error_kind: string | null;
  error: string | null;
  response_body: string | null;
}

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

const attemptOut = (r: AttemptRow) => ({
  id: `${ATTEMPT_PREFIX}${r.id}`,
  msgId: r.message_id,
  endpointId: r.endpoint_id,
  url: r.url,
  response: r.response_body ?? "",
  responseStatusCode: r.status_code ?? 0,
  responseDurationMs: r.latency_ms,
  status: r.outcome === "success" ? MessageStatus.success : MessageStatus.fail,
  statusText: r.outcome === "success" ? "success" : "fail",
  triggerType: r.trigger === "manual" ? 1 : 0,
  timestamp: iso(r.started_at),
  attemptNumber: r.attempt_number,
  errorKind: r.error_kind,
  error: r.error,
});

const ATTEMPT_COLUMNS = `id, message_id, endpoint_id, url, attempt_number, trigger, started_at,
  latency_ms, outcome, status_code, error_kind, error, response_body`;

function attemptCursor(iterator: string | null): number | null {
  if (iterator === null) return null;
  const n = Number(
    iterator.startsWith(ATTEMPT_PREFIX) ? iterator.slice(ATTEMPT_PREFIX.length) : iterator,
  );
  if (!Number.isSafeInteger(n) || n < 0) throw badRequest("iterator is not an attempt id");
  return n;
}

const str = { type: "string", minLength: 1, maxLength: 256 } as const;
const params = (...names: string[]) => ({
  type: "object",
  properties: Object.fromEntries(names.map((n) => [n, str])),
  required: names,
});
const attemptQuery = {
  type: "object",
  properties: {
    ...pageQuerySchema,
    status: { type: "integer", enum: [0, 1, 2, 3, 4] },
    endpoint_id: str,
  },
} as const;

type AttemptQuery = PageQuery & { status?: number; endpoint_id?: string };

export function registerAttemptRoutes(
  app: FastifyInstance,
  { pool, config, redactor }: ApiContext,
): void {
  async function listAttempts(
    filter: { messageId?: string; endpointId?: string },
    q: AttemptQuery,
  ) {
    const plan = planPage(q, "descending");
    const outcome =
      q.status === undefined
        ? null
        : q.status === 0
          ? "success"
          : q.status === 2
            ? "failure"
            : "none";
    const { rows } = await pool.query(
      `select ${ATTEMPT_COLUMNS} from attempts
       where ($1::text is null or message_id = $1::text)
         and ($2::text is null or endpoint_id = $2::text)
         and ($3::bigint is null or id ${plan.op} $3::bigint)
         and ($5::text is null or outcome = $5::text)
       order by id ${plan.direction} limit $4::integer`,
      [
        filter.messageId ?? null,
        filter.endpointId ?? null,
        attemptCursor(plan.cursor),
        plan.limit + 1,
        outcome,
      ],
    );
    return toPage(rows as AttemptRow[], plan, (r) => `${ATTEMPT_PREFIX}${r.id}`, attemptOut);
  }

  app.get<{ Params: { appId: string; msgId: string }; Querystring: AttemptQuery }>(
    "/app/:appId/attempt/msg/:msgId",
    { schema: { tags: ["attempt"], params: params("appId", "msgId"), querystring: attemptQuery } },
    async (request) => {
      const appId = await resolveAppId(pool, request.principal, request.params.appId);
      const msg = await findMessage(pool, appId, request.params.msgId);
      const endpointId = request.query.endpoint_id
        ? await resolveEndpointId(pool, appId, request.query.endpoint_id)
        : undefined;
      return listAttempts({ messageId: msg.id, endpointId }, request.query);
    },
  );

  app.get<{ Params: { appId: string; endpointId: string }; Querystring: AttemptQuery }>(
    "/app/:appId/attempt/endpoint/:endpointId",
    {
      schema: {
        tags: ["attempt"],
        params: params("appId", "endpointId"),
        querystring: attemptQuery,
      },
    },
    async (request) => {
      const appId = await resolveAppId(pool, request.principal, request.params.appId);
      const endpointId = await resolveEndpointId(pool, appId, request.params.endpointId);
      return listAttempts({ endpointId }, request.query);
    },
  );

  app.get<{ Params: { appId: string; msgId: string; attemptId: string } }>(
    "/app/:appId/msg/:msgId/attempt/:attemptId",
    { schema: { tags: ["attempt"], params: params("appId", "msgId", "attemptId") } },
    async (request) => {
      const appId = await resolveAppId(pool, request.principal, request.params.appId);
      const msg = await findMessage(pool, appId, request.params.msgId);
      const id = attemptCursor(request.params.attemptId);
      const { rows } = await pool.query(
        `select ${ATTEMPT_COLUMNS} from attempts where id = $1::bigint and message_id = $2::text`,
        [id, msg.id],
      );
      if (!rows[0]) throw notFound("attempt");
      return attemptOut(rows[0]);
    },
  );

  app.get<{ Params: { appId: string; msgId: string }; Querystring: PageQuery }>(
    "/app/:appId/msg/:msgId/endpoint",
    {
      schema: {
        tags: ["attempt"],
        params: params("appId", "msgId"),
        querystring: { type: "object", properties: pageQuerySchema },
      },
    },
    async (request) => {
      const appId = await resolveAppId(pool, request.principal, request.params.appId);
      const msg = await findMessage(pool, appId, request.params.msgId);
      const plan = planPage(request.query, "ascending", ID_PREFIX.endpoint);
      const { rows } = await pool.query(
        `select e.id, e.uid, e.url, e.description, e.disabled, e.event_types, e.channels,
                e.created_at, e.updated_at, d.status, d.attempt_count, d.next_attempt_at,
                d.last_status_code, d.last_error_kind, d.last_error, d.delivered_at
         from deliveries d join endpoints e on e.id = d.endpoint_id
         where d.message_id = $1::text and ($2::text is null or e.id ${plan.op} $2::text)
         order by e.id ${plan.direction} limit $3::integer`,
        [msg.id, plan.cursor, plan.limit + 1],
      );
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
      const { rows } = await pool.query(
        `select m.id, m.event_type, m.event_id, m.payload, m.channels, m.tags, m.created_at,
                d.status, d.next_attempt_at
         from deliveries d join messages m on m.id = d.message_id
         where d.endpoint_id = $1::text and ($2::text is null or d.message_id ${plan.op} $2::text)
           and ($4::text[] is null or d.status = any ($4::text[]))
           and ($5::text[] is null or m.event_type = any ($5::text[]))
           and ($6::text is null or $6::text = any (m.channels))
           and ($7::text is null or $7::text = any (m.tags))
           and ($8::timestamptz is null or m.created_at < $8::timestamptz)
           and ($9::timestamptz is null or m.created_at > $9::timestamptz)
         order by d.message_id ${plan.direction} limit $3::integer`,
        [
          endpointId,
          plan.cursor,
          plan.limit + 1,
          statuses,
          types?.length ? types : null,
          q.channel ?? null,
          q.tag ?? null,
          timeInput(q.before, "before"),
          timeInput(q.after, "after"),
        ],
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
      const msg = await findMessage(pool, appId, request.params.msgId);
      const endpointId = await resolveEndpointId(pool, appId, request.params.endpointId);
      // A fresh attempt budget, same message id. A delivery that is in flight right now is
      // left alone: resending it would race its own result.
      const { rowCount } = await pool.query(
        `with resent as (
           insert into deliveries (message_id, endpoint_id, app_id, max_attempts, trigger)
           select $1::text, e.id, e.app_id, coalesce(e.max_attempts, $3::integer), 'manual'
           from endpoints e where e.id = $2::text
           on conflict (message_id, endpoint_id) do update
             set status = 'pending', attempt_count = 0, max_attempts = excluded.max_attempts,
                 next_attempt_at = now(), trigger = 'manual', claim_token = null,
                 lease_expires_at = null, claimed_by = null, updated_at = now()
             where deliveries.status <> 'in_flight'
           returning 1
         )
         select pg_notify('${WORK_CHANNEL}', '') from resent`,
        [msg.id, endpointId, config.delivery.maxAttempts],
      );
      if (rowCount === 0)
        throw conflict(
          "this message is being delivered to the endpoint right now; try again shortly",
        );
      return reply.code(202).send({});
    },
  );
}
