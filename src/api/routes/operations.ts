/**
 * Operations (docs/operations.md), same auth as the management API; an app-scoped key
 * sees its app only.
 *   GET  /health/summary?app_id=
 *   GET  /alerts?app_id=
 *   GET  /dead-letters?app_id=&endpoint_id=&status_code=&error_kind=&since=&until=&iterator=
 *        (the newest death first; the iterator is a position, api/dead-letter-iterator.ts)
 *   GET  /dead-letters/analysis?app_id=&endpoint_id=&since=&until=&limit=&iterator=
 *   POST /dead-letters/requeue   { deliveryId | endpointId | since, appId?, includeFailed? }
 *   POST /deliveries/{deliveryId}/cancel
 */
import type { FastifyInstance, FastifyRequest } from "fastify";
import { deliveryStatus } from "../../db/queries/deliveries.ts";
import { publicIdsOf } from "../../ids-public-key.ts";
import { currentAlerts } from "../../ops/alerts.ts";
import {
  analyzeDeadLetters,
  cancelDelivery,
  type DeadLetterFilter,
  listDeadLetters,
  requeueDeliveries,
} from "../../ops/dead-letters.ts";
import { healthSummary } from "../../ops/health-summary.ts";
import { timeInput } from "../body-check.ts";
import type { ApiContext } from "../context.ts";
import { deadLetterIterator, deadLetterPositionOf } from "../dead-letter-iterator.ts";
import { badRequest, conflict, notFound } from "../errors.ts";
import {
  alertsResponse,
  deadLetterAnalysisResponse,
  deadLettersResponse,
  healthSummaryResponse,
} from "../health-responses.ts";
import { DEFAULT_LIMIT, MAX_LIMIT } from "../pagination.ts";
import { rowKeyOf } from "../public-id-input.ts";
import { resolveAppId, resolveEndpointFilter } from "../resolve.ts";
import { iso } from "../schemas.ts";

const str = { type: "string", minLength: 1, maxLength: 256 } as const;
const time = { type: "string", format: "date-time" } as const;
const filterQuery = {
  app_id: str,
  endpoint_id: str,
  status_code: { type: "integer", minimum: 100, maximum: 599 },
  error_kind: str,
  since: time,
  until: time,
} as const;

interface FilterQuery {
  app_id?: string;
  endpoint_id?: string;
  status_code?: number;
  error_kind?: string;
  since?: string;
  until?: string;
}

export function registerOperationRoutes(
  app: FastifyInstance,
  { pool, config, redactor }: ApiContext,
): void {
  /** The app a request is limited to: the query's (checked) or the key's own. */
  async function scope(request: FastifyRequest, appId: string | undefined): Promise<string | null> {
    if (appId) return resolveAppId(pool, request.principal, appId);
    return request.principal.role === "app" ? request.principal.appId : null;
  }

  /** An endpoint named by id or uid, within the request's app when it has one. */
  async function endpointInScope(
    request: FastifyRequest,
    appId: string | null,
    endpointId: string | undefined,
  ): Promise<string | null> {
    return endpointId ? resolveEndpointFilter(pool, request.principal, appId, endpointId) : null;
  }

  async function filterOf(request: FastifyRequest, q: FilterQuery): Promise<DeadLetterFilter> {
    const appId = await scope(request, q.app_id);
    return {
      appId,
      endpointId: await endpointInScope(request, appId, q.endpoint_id),
      statusCode: q.status_code ?? null,
      errorKind: q.error_kind ?? null,
      since: timeInput(q.since, "since"),
      until: timeInput(q.until, "until"),
    };
  }

  app.get<{ Querystring: { app_id?: string } }>(
    "/health/summary",
    {
      schema: {
        tags: ["operations"],
        querystring: { type: "object", properties: { app_id: str } },
        response: { 200: healthSummaryResponse },
      },
    },
    async (request) => healthSummary(pool, await scope(request, request.query.app_id)),
  );

  app.get<{ Querystring: { app_id?: string } }>(
    "/alerts",
    {
      schema: {
        tags: ["operations"],
        querystring: { type: "object", properties: { app_id: str } },
        response: { 200: alertsResponse },
      },
    },
    async (request) => {
      const alerts = await currentAlerts(pool, config, await scope(request, request.query.app_id));
      return { data: alerts.map((a) => ({ ...a, message: redactor.text(a.message) })) };
    },
  );

  app.get<{ Querystring: FilterQuery & { limit?: number; iterator?: string } }>(
    "/dead-letters",
    {
      schema: {
        tags: ["operations"],
        querystring: {
          type: "object",
          properties: {
            ...filterQuery,
            limit: { type: "integer", minimum: 1, maximum: MAX_LIMIT },
            iterator: str,
          },
        },
        response: { 200: deadLettersResponse },
      },
    },
    async (request) => {
      const q = request.query;
      const limit = q.limit ?? DEFAULT_LIMIT;
      const after = q.iterator
        ? await deadLetterPositionOf(pool, request.principal, q.iterator)
        : null;
      const rows = await listDeadLetters(pool, await filterOf(request, q), {
        limit: limit + 1,
        after,
      });
      const ids = await publicIdsOf(pool);
      const shown = (id: number) => ids.format("delivery", id);
      const page = rows.slice(0, limit);
      const last = page[page.length - 1];
      return {
        data: page.map(({ position: _, ...d }) => ({
          ...d,
          deliveryId: shown(d.deliveryId),
          url: redactor.url(d.url),
          error: d.error === null ? null : redactor.text(d.error),
          deadAt: iso(d.deadAt),
        })),
        iterator: last ? deadLetterIterator(last.position, shown) : null,
        prevIterator: null,
        done: rows.length <= limit,
      };
    },
  );

  app.get<{ Querystring: FilterQuery & { limit?: number; iterator?: string } }>(
    "/dead-letters/analysis",
    {
      schema: {
        tags: ["operations"],
        description:
          "One row per endpoint with matching dead letters, most dead first: pattern, suggested action, most common error and status. Without `limit`, every endpoint; with it, a page, and `iterator` (from the last page) continues the ranking. `endpointTotal` counts the endpoints on every page.",
        querystring: {
          type: "object",
          properties: {
            ...filterQuery,
            limit: { type: "integer", minimum: 1, maximum: MAX_LIMIT },
            iterator: { type: "string", pattern: "^[0-9]{1,9}$" },
          },
        },
        response: { 200: deadLetterAnalysisResponse },
      },
    },
    async (request) => {
      const q = request.query;
      const offset = q.iterator ? Number(q.iterator) : 0;
      const analysis = await analyzeDeadLetters(pool, await filterOf(request, q), {
        limit: q.limit ?? null,
        offset,
      });
      const next = offset + analysis.endpoints.length;
      const done = next >= analysis.endpointTotal;
      return {
        endpointTotal: analysis.endpointTotal,
        iterator: done ? null : String(next),
        done,
        data: analysis.endpoints.map((a) => ({
          ...a,
          url: redactor.url(a.url),
          mostCommonError: a.mostCommonError === null ? null : redactor.text(a.mostCommonError),
          firstDeadAt: iso(a.firstDeadAt),
          lastDeadAt: iso(a.lastDeadAt),
        })),
      };
    },
  );

  app.post<{
    Body: {
      deliveryId?: string;
      endpointId?: string;
      since?: string;
      appId?: string;
      includeFailed?: boolean;
    };
  }>(
    "/dead-letters/requeue",
    {
      schema: {
        tags: ["operations"],
        body: {
          type: "object",
          additionalProperties: false,
          properties: {
            deliveryId: str,
            endpointId: str,
            since: time,
            appId: str,
            includeFailed: { type: "boolean" },
          },
        },
      },
    },
    async (request) => {
      const b = request.body;
      if (!b.deliveryId && !b.endpointId && !b.since) {
        throw badRequest("say what to requeue: deliveryId, endpointId or since");
      }
      const appId = await scope(request, b.appId);
      const requeued = await requeueDeliveries(
        pool,
        {
          deliveryId: b.deliveryId
            ? await rowKeyOf(pool, request.principal, "delivery", b.deliveryId)
            : undefined,
          endpointId: (await endpointInScope(request, appId, b.endpointId)) ?? undefined,
          since: timeInput(b.since, "since") ?? undefined,
          appId,
          includeFailed: b.includeFailed,
        },
        `api:${request.principal.keyId}`,
        config.delivery.maxAttempts,
      );
      if (b.deliveryId && requeued === 0) throw notFound("dead or failed delivery");
      return { requeued };
    },
  );

  app.post<{ Params: { deliveryId: string } }>(
    "/deliveries/:deliveryId/cancel",
    {
      schema: {
        tags: ["operations"],
        params: { type: "object", properties: { deliveryId: str }, required: ["deliveryId"] },
      },
    },
    async (request) => {
      const id = await rowKeyOf(pool, request.principal, "delivery", request.params.deliveryId);
      const appId = request.principal.role === "app" ? request.principal.appId : null;
      const status = await deliveryStatus(pool, id, appId);
      if (status === null) throw notFound("delivery");
      if (!(await cancelDelivery(pool, id, appId))) {
        throw conflict(`a ${status} delivery cannot be canceled (only pending or awaiting retry)`);
      }
      return { deliveryId: (await publicIdsOf(pool)).format("delivery", id), status: "canceled" };
    },
  );
}
