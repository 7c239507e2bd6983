/**
 * The portal's delivery log (docs/portal.md, "Pages"), read through the API as the
 * session's app:
 *   GET  /portal/messages                         the app's messages, newest first,
 *                                                 filtered, with a status column
 *                                                 (dashboard/message-browse.ts)
 *   GET  /portal/message-export?format=csv|json   the filtered list as a file, streamed
 *   GET  /portal/messages/{msg}                   one message (id or eventId): its payload,
 *                                                 masked, and its delivery to each endpoint
 *                                                 with every attempt
 *   GET  /portal/messages/{msg}/payload           its payload as stored, as a download
 *   POST /portal/messages/{msg}/endpoints/{ep}/resend
 * The payload is shown bounded in size and depth (dashboard/payload-view.ts).
 */
import type { FastifyInstance } from "fastify";
import { answerError } from "../../api/in-process.ts";
import { deliveryStateText } from "../../dashboard/format.ts";
import { type Html, html } from "../../dashboard/html.ts";
import {
  filterParams,
  listFooter,
  messageApiQuery,
  messageFilterForm,
  messageFiltersOf,
  messageTable,
  refused,
  sendExport,
} from "../../dashboard/message-browse.ts";
import { sendPayload, storedPayload } from "../../dashboard/payload-download.ts";
import { clippedText, payloadView } from "../../dashboard/payload-view.ts";
import { refreshWhileWaiting } from "../../dashboard/refresh-while-waiting.ts";
import { can, type PortalDeps, requireCan, sessionOf } from "../context.ts";
import { portalPath } from "../layout.ts";
import { badge, ms, when } from "../views.ts";
import { actionButton } from "./endpoint-detail.ts";
import { appApi, notice } from "./endpoints.ts";

export function registerMessagePages(app: FastifyInstance, deps: PortalDeps): void {
  app.get<{ Querystring: { iterator?: string } }>(
    "/messages",
    { schema: { hide: true } },
    async (request, reply) => {
      const session = sessionOf(request);
      const it = request.query.iterator;
      const iterator = typeof it === "string" ? it : undefined;
      const filters = messageFiltersOf(request.query);
      const endpoints = await deps.read(
        session,
        "/api/v1/app/:appId/endpoint",
        { appId: session.appId },
        { limit: 250 },
      );
      const form = messageFilterForm({
        action: "/portal/messages",
        filters,
        endpoints: endpoints.data.map((e) => ({ id: e.id, label: e.url })),
      });
      const apiQuery = messageApiQuery(filters);
      apiQuery.set("limit", "50");
      apiQuery.set("with_content", "false");
      apiQuery.set("with_status", "true");
      if (iterator) apiQuery.set("iterator", iterator);
      const res = await deps.calls.call(
        session.principal,
        "GET",
        `${appApi(session, "msg")}?${apiQuery}`,
      );
      const shell = (body: Html, status = 200) =>
        deps.page(
          reply,
          {
            session,
            csrfToken: session.csrfToken,
            title: "Delivery log",
            active: "/portal/messages",
            body: html`<h1>Delivery log</h1>${body}`,
          },
          status,
        );
      if (res.status === 422 || res.status === 400)
        return shell(refused(form, res.body?.detail), res.status);
      if (res.status >= 400) throw answerError(res);
      const page = res.body;
      const here = (extra: Record<string, string>) =>
        portalPath(["messages"], { ...filterParams(filters), ...extra });
      return shell(html`${form}
${messageTable(page.data, (id) => portalPath(["messages", id]))}
${listFooter(
  page,
  iterator && page.prevIterator ? here({ iterator: page.prevIterator }) : null,
  page.iterator ? here({ iterator: page.iterator }) : null,
  (format) => portalPath(["message-export"], { ...filterParams(filters), format }),
)}`);
    },
  );

  app.get<{ Querystring: { format?: string } }>(
    "/message-export",
    { schema: { hide: true } },
    async (request, reply) => {
      const session = sessionOf(request);
      const format = typeof request.query.format === "string" ? request.query.format : undefined;
      return sendExport(
        reply,
        deps.calls,
        session.principal,
        appApi(session, "export", "msg"),
        messageApiQuery(messageFiltersOf(request.query)),
        format,
      );
    },
  );

  app.get<{ Params: { msgId: string }; Querystring: { done?: string } }>(
    "/messages/:msgId",
    { schema: { hide: true } },
    async (request, reply) => {
      const session = sessionOf(request);
      // the facts without the payload; the payload as stored, never parsed (it may nest deeply)
      const msg = await deps.read(
        session,
        "/api/v1/app/:appId/msg/:msgId",
        { appId: session.appId, msgId: request.params.msgId },
        { with_content: "false" },
      );
      const payload = await storedPayload(
        deps.calls,
        session.principal,
        appApi(session, "msg", msg.id),
      );
      const ids = { appId: session.appId, msgId: msg.id };
      const deliveries = await deps.read(session, "/api/v1/app/:appId/msg/:msgId/endpoint", ids, {
        limit: 250,
      });
      const attempts = await deps.read(session, "/api/v1/app/:appId/attempt/msg/:msgId", ids, {
        limit: 250,
      });
      const resend = can(session, "createAttempts");
      return deps.page(reply, {
        session,
        csrfToken: session.csrfToken,
        title: "Message",
        active: "/portal/messages",
        body: html`<h1>Message</h1>
${notice(request.query.done)}
<dl class="facts">
<dt>Id</dt><dd><code>${msg.id}</code></dd>
<dt>Event type</dt><dd>${msg.eventType}</dd>
<dt>Event id</dt><dd>${msg.eventId ?? "–"}</dd>
<dt>Time</dt><dd>${when(msg.timestamp)}</dd>
</dl>
<h2>Payload</h2>
${payloadView(
  deps.redactor.text(payload.text),
  Buffer.byteLength(payload.text),
  portalPath(["messages", msg.id, "payload"]),
)}
<h2>Deliveries</h2>
<div id="deliveries"${refreshWhileWaiting(deliveries.data, portalPath(["messages", msg.id]))}>
${
  deliveries.data.length === 0
    ? html`<p class="muted">No endpoint was subscribed to this message.</p>`
    : deliveries.data.map(
        (d) => html`<section class="delivery">
<h3><a href="${portalPath(["endpoints", d.id])}"><code>${d.url}</code></a> ${badge(d.deliveryStatus, deliveryStateText(d))}</h3>
<ol class="timeline">${attempts.data
          .filter((a) => a.endpointId === d.id)
          .reverse()
          .map(
            (a) =>
              html`<li class="${a.status === 0 ? "success" : "failure"}">${when(a.timestamp)} · attempt ${a.attemptNumber} · ${a.responseStatusCode || a.errorKind || "no response"} · ${ms(a.responseDurationMs)}${a.error ? html` · <span class="muted">${clippedText(a.error)}</span>` : ""}</li>`,
          )}</ol>
${resend && actionButton(session, portalPath(["messages", msg.id, "endpoints", d.id, "resend"]), "Resend")}
</section>`,
      )
}
</div>`,
      });
    },
  );

  app.get<{ Params: { msgId: string } }>(
    "/messages/:msgId/payload",
    { schema: { hide: true } },
    async (request, reply) => {
      const session = sessionOf(request);
      const messageApi = appApi(session, "msg", request.params.msgId);
      return sendPayload(reply, await storedPayload(deps.calls, session.principal, messageApi));
    },
  );

  app.post<{ Params: { msgId: string; endpointId: string } }>(
    "/messages/:msgId/endpoints/:endpointId/resend",
    { schema: { hide: true } },
    async (request, reply) => {
      const session = sessionOf(request);
      requireCan(session, "createAttempts");
      const { msgId, endpointId } = request.params;
      const msg = await deps.read(
        session,
        "/api/v1/app/:appId/msg/:msgId",
        { appId: session.appId, msgId },
        { with_content: "false" },
      );
      await deps.api(
        session,
        "POST",
        appApi(session, "msg", msg.id, "endpoint", endpointId, "resend"),
      );
      return reply.redirect(portalPath(["messages", msg.id], { done: "resent" }), 303);
    },
  );
}
