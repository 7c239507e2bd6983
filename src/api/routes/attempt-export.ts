/**
 * GET /app/{appId}/export/attempt/endpoint/{endpointId}: an endpoint's attempts as its
 * attempt list filters them, as CSV or JSON, newest first, streamed and capped
 * (api/list-export.ts, docs/browse.md "Export"). URLs and errors are masked as the list
 * masks them; response bodies are left out.
 */
import type { FastifyInstance } from "fastify";
import { type AttemptRow, listAttempts } from "../../db/queries/attempts.ts";
import { publicIdsOf } from "../../ids-public-key.ts";
import type { ApiContext } from "../context.ts";
import {
  type ExportQuery,
  exportQuerySchema,
  exportResponseSchema,
  exportStream,
} from "../list-export.ts";
import type { PageQuery } from "../pagination.ts";
import { resolveAppId, resolveEndpointId } from "../resolve.ts";
import { type AttemptQuery, attemptFilterOf, attemptQuery } from "./attempts.ts";

const COLUMNS = [
  "id",
  "msgId",
  "endpointId",
  "timestamp",
  "status",
  "responseStatusCode",
  "errorKind",
  "error",
  "attemptNumber",
  "responseDurationMs",
  "trigger",
  "url",
] as const;

const { limit: _l, iterator: _i, order: _o, ...filterProperties } = attemptQuery.properties;
const str = { type: "string", minLength: 1, maxLength: 256 } as const;

export function registerAttemptExportRoute(
  app: FastifyInstance,
  { pool, redactor }: ApiContext,
): void {
  app.get<{
    Params: { appId: string; endpointId: string };
    Querystring: Omit<AttemptQuery, keyof PageQuery | "endpoint_id"> & ExportQuery;
  }>(
    "/app/:appId/export/attempt/endpoint/:endpointId",
    {
      schema: {
        tags: ["attempt"],
        summary: "Export an endpoint's attempts",
        description:
          "The endpoint's attempts as its attempt list filters them, as CSV or JSON, newest first: streamed, at most max_rows (100,000); an export cut at the cap says so at its end.",
        params: {
          type: "object",
          properties: { appId: str, endpointId: str },
          required: ["appId", "endpointId"],
        },
        querystring: {
          type: "object",
          properties: { ...filterProperties, ...exportQuerySchema },
        },
        response: exportResponseSchema,
      },
    },
    async (request, reply) => {
      const appId = await resolveAppId(pool, request.principal, request.params.appId);
      const endpointId = await resolveEndpointId(pool, appId, request.params.endpointId);
      const q = request.query;
      const filter = attemptFilterOf({ endpointId }, q);
      const ids = await publicIdsOf(pool);
      const shown = (r: AttemptRow) => ({
        id: ids.format("attempt", r.id),
        msgId: r.message_id,
        endpointId: r.endpoint_id,
        timestamp: r.started_at.toISOString(),
        status: r.outcome === "success" ? "success" : "fail",
        responseStatusCode: r.status_code ?? 0,
        errorKind: r.error_kind,
        error: r.error === null ? null : redactor.text(r.error),
        attemptNumber: r.attempt_number,
        responseDurationMs: r.latency_ms,
        trigger: r.trigger,
        url: redactor.url(r.url),
      });
      const stream = exportStream<AttemptRow>({
        format: q.format,
        maxRows: q.max_rows,
        columns: COLUMNS,
        fetch: (after, limit) =>
          listAttempts(pool, filter, {
            cursor: after?.id ?? null,
            op: "<",
            direction: "desc",
            limit,
          }),
        csvRow: (r) => {
          const a = shown(r);
          return COLUMNS.map((c) => a[c]);
        },
        jsonRow: (r) => JSON.stringify(shown(r)),
      });
      return reply
        .type(q.format === "csv" ? "text/csv; charset=utf-8" : "application/json; charset=utf-8")
        .header(
          "content-disposition",
          `attachment; filename="attempts-${endpointId}.${q.format === "csv" ? "csv" : "json"}"`,
        )
        .header("x-hookrelay-export-max-rows", String(q.max_rows))
        .send(stream);
    },
  );
}
