/**
 * GET /dashboard/message-list?app=&event_types=&channel=&status=&endpoint=&after=&before=
 * &iterator=: an app's messages, newest first, filtered, a page of 50 at a time through
 * the API's own list and iterator, each with how its deliveries stand (docs/browse.md).
 * GET /dashboard/message-list/export?...&format=csv|json: the same filtered list as a
 * file, streamed from the API's export (at most 100,000 messages; a cut export says so).
 * A filter the API refuses (an unknown state, a date that is not one) is shown on the
 * page in the API's words, with a 422.
 */
import type { FastifyInstance, FastifyReply } from "fastify";
import type { Principal } from "../../api/auth.ts";
import { answerError } from "../../api/in-process.ts";
import { type DashboardDeps, sessionOf } from "../context.ts";
import { ownApp } from "../format.ts";
import { dashboardPath, type Html, html } from "../html.ts";
import { sendPage } from "../layout.ts";
import {
  filterParams,
  listFooter,
  messageApiQuery,
  messageFilterForm,
  messageFiltersOf,
  messageTable,
  refused,
  sendExport,
} from "../message-browse.ts";
import { queryStrings } from "../query.ts";

const PAGE_SIZE = 50;

export function registerMessageListPages(app: FastifyInstance, deps: DashboardDeps): void {
  const { calls } = deps;

  /** The apps the principal may pick: its own, or (admin) the first 250 by the API. */
  async function appsOf(principal: Principal): Promise<{ id: string; name: string }[]> {
    const res = await calls.call(principal, "GET", "/api/v1/app?limit=250");
    return res.status === 200 ? res.body.data : [];
  }

  const appPicker = (apps: readonly { id: string; name: string }[], current: string): Html =>
    html`<label>App<select name="app" required>${apps.map(
      (a) =>
        html`<option value="${a.id}"${a.id === current ? html` selected` : ""}>${a.name}</option>`,
    )}</select></label>`;

  const send = (
    reply: FastifyReply,
    session: ReturnType<typeof sessionOf>,
    body: Html,
    status = 200,
  ) =>
    sendPage(
      reply,
      {
        title: "Messages",
        principal: session.principal,
        csrfToken: session.csrfToken,
        active: "/dashboard/message-list",
        body: html`<h1>Messages</h1>${body}`,
      },
      status,
    );

  app.get("/message-list", { schema: { hide: true } }, async (request, reply) => {
    const session = sessionOf(request);
    const { principal } = session;
    const q = queryStrings(request.query);
    const filters = messageFiltersOf(request.query);
    const apps = await appsOf(principal);
    const appId = ownApp(principal) ?? (q.app || apps[0]?.id || "");
    if (!appId) return send(reply, session, html`<p class="muted">No app yet.</p>`);
    const endpoints = await calls.read(
      principal,
      "/api/v1/app/:appId/endpoint",
      { appId },
      { limit: 250 },
    );
    const form = messageFilterForm({
      action: "/dashboard/message-list",
      filters,
      endpoints: endpoints.data.map((e) => ({ id: e.id, label: e.url })),
      lead: ownApp(principal) ? undefined : appPicker(apps, appId),
    });
    const here = (extra: Record<string, string | null>) =>
      dashboardPath(["message-list"], { app: appId, ...filterParams(filters), ...extra });
    const apiQuery = messageApiQuery(filters);
    apiQuery.set("limit", String(PAGE_SIZE));
    apiQuery.set("with_content", "false");
    apiQuery.set("with_status", "true");
    if (q.iterator) apiQuery.set("iterator", q.iterator);
    const res = await calls.call(
      principal,
      "GET",
      `/api/v1/app/${encodeURIComponent(appId)}/msg?${apiQuery}`,
    );
    if (res.status === 422 || res.status === 400)
      return send(reply, session, refused(form, res.body?.detail), res.status);
    if (res.status >= 400) throw answerError(res);
    const page = res.body;
    return send(
      reply,
      session,
      html`${form}
${messageTable(page.data, (id) => dashboardPath(["messages", id]))}
${listFooter(
  page,
  q.iterator && page.prevIterator ? here({ iterator: page.prevIterator }) : null,
  page.iterator ? here({ iterator: page.iterator }) : null,
  (format) =>
    dashboardPath(["message-list", "export"], { app: appId, ...filterParams(filters), format }),
)}`,
    );
  });

  app.get("/message-list/export", { schema: { hide: true } }, async (request, reply) => {
    const session = sessionOf(request);
    const q = queryStrings(request.query);
    const appId = ownApp(session.principal) ?? q.app ?? "";
    return sendExport(
      reply,
      calls,
      session.principal,
      `/api/v1/app/${encodeURIComponent(appId)}/export/msg`,
      messageApiQuery(messageFiltersOf(request.query)),
      q.format,
    );
  });
}
