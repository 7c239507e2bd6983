/** GET /healthz: 200 when the database answers, 503 otherwise. */
import type { FastifyInstance } from "fastify";
import type { ApiContext } from "../server.ts";

export function registerHealthRoutes(app: FastifyInstance, ctx: ApiContext): void {
  app.get("/healthz", { schema: { hide: true } }, async (_request, reply) => {
    try {
      await ctx.pool.query("select 1");
      return { status: "ok" };
    } catch (err) {
      reply.code(503);
      return { status: "unavailable", detail: `database unreachable: ${(err as Error).message}` };
    }
  });
}
