/**
 * GET /app/{app}/endpoint/{ep}/stats?since&until: Svix's EndpointStats, counted from the
 * endpoint's deliveries (one per message it was due to get) created in the window
 * (README.md, Using the svix client). hookrelay's delivery states map to Svix's message
 * statuses as everywhere in the API (routes/attempts.ts):
 *
 *   success   delivered
 *   pending   pending (waiting, held while the endpoint is disabled, or scheduled) and
 *             failed (an attempt failed; the next is scheduled)
 *   sending   in_flight (a worker is sending it now)
 *   fail      dead_letter
 *   canceled  canceled (by an operator, skipped while disabled, or its payload expunged)
 */
import type { FastifyInstance } from "fastify";
import { deliveryCountsByStatus } from "../../db/queries/endpoint-stats.ts";
import { timeInput } from "../body-check.ts";
import type { ApiContext } from "../context.ts";
import { badRequest } from "../errors.ts";
import { resolveAppId, resolveEndpointId } from "../resolve.ts";
import { endpointStatsResponse } from "../response-schemas.ts";

/** Svix's stats field for each delivery status. */
export const STATS_FIELD = {
  delivered: "success",
  pending: "pending",
  failed: "pending",
  in_flight: "sending",
  dead_letter: "fail",
  canceled: "canceled",
} as const;

type StatsField = (typeof STATS_FIELD)[keyof typeof STATS_FIELD];

export function registerEndpointStatsRoute(app: FastifyInstance, { pool }: ApiContext): void {
  app.get<{
    Params: { appId: string; endpointId: string };
    Querystring: { since?: string; until?: string };
  }>(
    "/app/:appId/endpoint/:endpointId/stats",
    {
      schema: {
        tags: ["endpoint"],
        summary: "The endpoint's deliveries by status (Svix's EndpointStats)",
        params: {
          type: "object",
          properties: {
            appId: { type: "string", minLength: 1, maxLength: 256 },
            endpointId: { type: "string", minLength: 1, maxLength: 256 },
          },
          required: ["appId", "endpointId"],
        },
        querystring: {
          type: "object",
          properties: {
            since: { type: "string", format: "date-time" },
            until: { type: "string", format: "date-time" },
          },
        },
        response: { 200: endpointStatsResponse },
      },
    },
    async (request) => {
      const appId = await resolveAppId(pool, request.principal, request.params.appId);
      const endpointId = await resolveEndpointId(pool, appId, request.params.endpointId);
      const since = timeInput(request.query.since, "since");
      const until = timeInput(request.query.until, "until");
      if (since && until && until < since) throw badRequest("until is before since");
      const counts = await deliveryCountsByStatus(pool, endpointId, since, until);
      const stats: Record<StatsField, number> = {
        success: 0,
        pending: 0,
        sending: 0,
        fail: 0,
        canceled: 0,
      };
      for (const [status, n] of counts) {
        const field = STATS_FIELD[status as keyof typeof STATS_FIELD];
        if (field) stats[field] += n;
      }
      return stats;
    },
  );
}
