/**
 * GET /app/{appId}/export/msg: the app's messages as the message list filters them, as
 * CSV or JSON, streamed and capped (api/list-export.ts, docs/browse.md "Export"). Each row
 * carries the message's facts and how its deliveries stand; the payload only in JSON and
 * only with with_content=true.
 */
import type { FastifyInstance } from "fastify";
import { type DeliveryCounts, deliveryCountsOf } from "../../db/queries/message-delivery-counts.ts";
import { listMessages, type MessageRow } from "../../db/queries/messages.ts";
import { EXPUNGED_PAYLOAD_SHOWN, isExpunged } from "../../domain/expunged-payload.ts";
import type { ApiContext } from "../context.ts";
import {
  type ExportQuery,
  exportQuerySchema,
  exportResponseSchema,
  exportStream,
} from "../list-export.ts";
import { type MessageFilterQuery, messageFilterOf, messageFilterQuery } from "../message-filter.ts";
import { resolveAppId } from "../resolve.ts";
import { appParams } from "../schemas.ts";

const COLUMNS = [
  "id",
  "timestamp",
  "eventType",
  "eventId",
  "channels",
  "tags",
  "orderingKey",
  "status",
] as const;

/** How a message's deliveries stand, in words: "delivered 2, failed 1"; "no endpoint". */
export function deliveryStatusText(counts: Readonly<Record<string, number>> | undefined): string {
  const parts = Object.entries(counts ?? {})
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([status, n]) => `${status} ${n}`);
  return parts.length === 0 ? "no endpoint" : parts.join(", ");
}

export function registerMessageExportRoute(app: FastifyInstance, { pool }: ApiContext): void {
  app.get<{
    Params: { appId: string };
    Querystring: MessageFilterQuery &
      ExportQuery & { order?: "ascending" | "descending"; with_content: boolean };
  }>(
    "/app/:appId/export/msg",
    {
      schema: {
        tags: ["message"],
        summary: "Export messages",
        description:
          "The app's messages as the message list filters them, as CSV or JSON, newest first: streamed, at most max_rows (100,000); an export cut at the cap says so at its end.",
        params: appParams,
        querystring: {
          type: "object",
          properties: {
            ...messageFilterQuery,
            ...exportQuerySchema,
            order: { type: "string", enum: ["ascending", "descending"] },
            with_content: { type: "boolean", default: false },
          },
        },
        response: exportResponseSchema,
      },
    },
    async (request, reply) => {
      const appId = await resolveAppId(pool, request.principal, request.params.appId);
      const q = request.query;
      const filter = await messageFilterOf(pool, appId, q);
      const asc = q.order === "ascending";
      let counts: DeliveryCounts = new Map();
      const stream = exportStream<MessageRow>({
        format: q.format,
        maxRows: q.max_rows,
        columns: COLUMNS,
        fetch: (after, limit) =>
          listMessages(pool, appId, filter, {
            cursor: after?.id ?? null,
            op: asc ? ">" : "<",
            direction: asc ? "asc" : "desc",
            limit,
          }),
        prepare: async (rows) => {
          counts = await deliveryCountsOf(
            pool,
            rows.map((r) => r.id),
          );
        },
        csvRow: (r) => [
          r.id,
          r.created_at.toISOString(),
          r.event_type,
          r.event_id,
          (r.channels ?? []).join(" "),
          (r.tags ?? []).join(" "),
          r.ordering_key,
          deliveryStatusText(counts.get(r.id)),
        ],
        jsonRow: (r) => {
          const head = JSON.stringify({
            id: r.id,
            timestamp: r.created_at.toISOString(),
            eventType: r.event_type,
            eventId: r.event_id,
            channels: r.channels,
            tags: r.tags,
            orderingKey: r.ordering_key,
            deliveryStatusCounts: counts.get(r.id) ?? {},
          });
          if (!q.with_content) return head;
          // the payload as stored, embedded byte for byte (it is JSON text already)
          const payload = isExpunged(r.payload) ? EXPUNGED_PAYLOAD_SHOWN : r.payload;
          return `${head.slice(0, -1)},"payload":${payload}}`;
        },
      });
      const ext = q.format === "csv" ? "csv" : "json";
      return reply
        .type(q.format === "csv" ? "text/csv; charset=utf-8" : "application/json; charset=utf-8")
        .header("content-disposition", `attachment; filename="messages-${appId}.${ext}"`)
        .header("x-hookrelay-export-max-rows", String(q.max_rows))
        .send(stream);
    },
  );
}
