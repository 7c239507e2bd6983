/**
 * GET /dashboard/chart-data?endpoint_id=&hours=&bucket_minutes=: the chart buckets for the
 * page's script (static/charts.js), read from GET /api/v1/stats/buckets as the signed-in
 * principal, so the browser needs no API key.
 */
import type { FastifyInstance } from "fastify";
import { type DashboardDeps, sessionOf } from "../context.ts";

export function registerChartData(app: FastifyInstance, { calls }: DashboardDeps): void {
  app.get<{ Querystring: Record<string, string> }>(
    "/chart-data",
    { schema: { hide: true } },
    async (request, reply) => {
      const { principal } = sessionOf(request);
      const query = new URLSearchParams();
      for (const name of ["endpoint_id", "app_id", "hours", "bucket_minutes"]) {
        const value = request.query[name];
        if (typeof value === "string" && value !== "") query.set(name, value);
      }
      const res = await calls.call(principal, "GET", `/api/v1/stats/buckets?${query}`);
      return reply.code(res.status).header("cache-control", "no-store").send(res.body);
    },
  );
}
