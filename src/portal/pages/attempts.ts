/**
 * GET /portal/attempts?endpoint=&result=&status_code_class=&event_types=&channel=&after=
 * &before=&iterator=: the app's attempts to one of its endpoints, newest first, filtered,
 * read through the API as the session's app (dashboard/attempt-browse.ts, docs/browse.md);
 * GET /portal/attempt-export?...&format=csv|json the list as filtered, streamed.
 */
import type { FastifyInstance } from "fastify";
import { attemptListContent, sendAttemptExport } from "../../dashboard/attempt-browse.ts";
import { html } from "../../dashboard/html.ts";
import { type PortalDeps, sessionOf } from "../context.ts";
import { portalPath } from "../layout.ts";

export function registerAttemptPage(app: FastifyInstance, deps: PortalDeps): void {
  app.get("/attempts", { schema: { hide: true } }, async (request, reply) => {
    const session = sessionOf(request);
    const content = await attemptListContent({
      calls: deps.calls,
      principal: session.principal,
      appId: session.appId,
      query: request.query,
      action: "/portal/attempts",
      pathOf: (query) => portalPath(["attempts"], query),
      messageLink: (id) => portalPath(["messages", id]),
      exportOf: (query) => portalPath(["attempt-export"], query),
    });
    return deps.page(
      reply,
      {
        session,
        csrfToken: session.csrfToken,
        title: "Attempts",
        active: "/portal/attempts",
        body: html`<h1>Attempts</h1>${content.body}`,
      },
      content.status,
    );
  });

  app.get("/attempt-export", { schema: { hide: true } }, async (request, reply) => {
    const session = sessionOf(request);
    return sendAttemptExport(reply, deps.calls, session.principal, session.appId, request.query);
  });
}
