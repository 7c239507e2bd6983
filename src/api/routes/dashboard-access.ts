/**
 * POST /auth/dashboard-access/{appId}: Svix's older name for app-portal-access (the svix 1
 * client's `authentication.dashboardAccess`). It makes the same link, with the defaults of
 * a link that names nothing (every capability, 1 h: routes/portal-access.ts), and answers
 * Svix's DashboardAccessOut, `{ url, token }`. Revoke it like any link (docs/portal.md).
 */
import type { FastifyInstance } from "fastify";
import type { ApiContext } from "../context.ts";
import { appParams } from "../schemas.ts";
import { issuePortalLink } from "./portal-access.ts";

export function registerDashboardAccessRoute(app: FastifyInstance, ctx: ApiContext): void {
  app.post<{ Params: { appId: string } }>(
    "/auth/dashboard-access/:appId",
    {
      // the answer holds a token stored only as a hash: never replayed (as app-portal-access)
      config: { idempotency: false },
      schema: {
        tags: ["portal"],
        summary: "A portal link, in Svix's older DashboardAccessOut shape",
        params: appParams,
        // svix 1 sends no body; an empty object is taken too
        body: { type: ["object", "null"], additionalProperties: false },
        response: {
          200: {
            type: "object",
            properties: { url: { type: "string" }, token: { type: "string" } },
            required: ["url", "token"],
          },
        },
      },
    },
    async (request) => {
      const link = await issuePortalLink(ctx, request, request.params.appId, {});
      return { url: link.url, token: link.token };
    },
  );
}
