/**
 * GET /dashboard/attempt-list?app=&endpoint=&result=&status_code_class=&event_types=
 * &channel=&after=&before=&iterator=: an endpoint's attempts, newest first, filtered, 50
 * at a time through the API's attempt list and iterator (docs/browse.md). A filter the
 * API refuses is shown on the page in its words, with a 422.
 * GET /dashboard/attempt-list/export?...&format=csv|json: the list as filtered, streamed
 * from the API's attempt export.
 */
import type { FastifyInstance } from "fastify";
import { attemptListContent, sendAttemptExport } from "../attempt-browse.ts";
import { type DashboardDeps, sessionOf } from "../context.ts";
import { ownApp } from "../format.ts";
import { dashboardPath, html } from "../html.ts";
import { sendPage } from "../layout.ts";
import { queryStrings } from "../query.ts";

export function registerAttemptListPage(app: FastifyInstance, { calls }: DashboardDeps): void {
  app.get("/attempt-list", { schema: { hide: true } }, async (request, reply) => {
    const session = sessionOf(request);
    const { principal } = session;
    const apps = await calls.call(principal, "GET", "/api/v1/app?limit=250");
    const appList: { id: string; name: string }[] = apps.status === 200 ? apps.body.data : [];
    const appId = ownApp(principal) ?? (queryStrings(request.query).app || appList[0]?.id || "");
    const lead = ownApp(principal)
      ? undefined
      : html`<label>App<select name="app" required>${appList.map(
          (a) =>
            html`<option value="${a.id}"${a.id === appId ? html` selected` : ""}>${a.name}</option>`,
        )}</select></label>`;
    const content = appId
      ? await attemptListContent({
          calls,
          principal,
          appId,
          query: request.query,
          action: "/dashboard/attempt-list",
          lead,
          pathOf: (query) => dashboardPath(["attempt-list"], { app: appId, ...query }),
          messageLink: (id) => dashboardPath(["messages", id]),
          exportOf: (query) => dashboardPath(["attempt-list", "export"], { app: appId, ...query }),
        })
      : { status: 200, body: html`<p class="muted">No app yet.</p>` };
    return sendPage(
      reply,
      {
        title: "Attempts",
        principal,
        csrfToken: session.csrfToken,
        active: "/dashboard/attempt-list",
        body: html`<h1>Attempts</h1>${content.body}`,
      },
      content.status,
    );
  });

  app.get("/attempt-list/export", { schema: { hide: true } }, async (request, reply) => {
    const session = sessionOf(request);
    const appId = ownApp(session.principal) ?? queryStrings(request.query).app ?? "";
    return sendAttemptExport(reply, calls, session.principal, appId, request.query);
  });
}
