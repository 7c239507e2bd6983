/** GET /dashboard: the overview (docs/dashboard.md, "Pages"). */
import type { FastifyInstance } from "fastify";
import { html } from "../html.ts";
import { sendPage } from "../layout.ts";
import { type DashboardDeps, sessionOf } from "../plugin.ts";

export function registerOverviewPage(app: FastifyInstance, { calls }: DashboardDeps): void {
  app.get("/", { schema: { hide: true } }, async (request, reply) => {
    const session = sessionOf(request);
    const summary = await calls.call(session.principal, "GET", "/api/v1/health/summary");
    return sendPage(reply, {
      title: "Overview",
      principal: session.principal,
      csrfToken: session.csrfToken,
      active: "/dashboard",
      body: html`<h1>Overview</h1><pre>${JSON.stringify(summary.body, null, 2)}</pre>`,
    });
  });
}
