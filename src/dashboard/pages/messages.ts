/**
 * GET /dashboard/messages?q=: message lookup by message id or eventId; GET
 * /dashboard/messages/{msgId}: one message (docs/dashboard.md, "Pages"): its payload with
 * sensitive fields masked, every delivery with its attempt timeline, and resend to one
 * endpoint (POST /dashboard/messages/{msgId}/resend, carried out by the API's resend route).
 * The payload is shown bounded (payload-view.ts); GET /dashboard/messages/{msgId}/payload
 * downloads it as stored.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { Principal } from "../../api/auth.ts";
import { notFound } from "../../api/errors.ts";
import { answerError } from "../../api/in-process.ts";
import { type DashboardDeps, sessionOf } from "../context.ts";
import { CSRF_FIELD } from "../csrf.ts";
import { field } from "../form-body.ts";
import { deliveryBadge, ms, ownApp, time } from "../format.ts";
import { dashboardPath, type Html, html } from "../html.ts";
import { sendPage } from "../layout.ts";
import { sendPayload, storedPayload } from "../payload-download.ts";
import { clippedText, payloadView } from "../payload-view.ts";
import { queryStrings } from "../query.ts";
import { refreshWhileWaiting } from "../refresh-while-waiting.ts";
import { lookUpMessages, type MessageHit } from "../sql/message-lookup.ts";

export function registerMessagePages(app: FastifyInstance, deps: DashboardDeps): void {
  const { calls, pool, redactor } = deps;

  async function detail(principal: Principal, csrf: string, hit: MessageHit): Promise<Html> {
    const base = `/api/v1/app/${encodeURIComponent(hit.app_id)}`;
    const msg = { appId: hit.app_id, msgId: hit.id };
    const [payload, deliveries, attempts] = await Promise.all([
      storedPayload(calls, principal, `${base}/msg/${encodeURIComponent(hit.id)}`),
      calls.read(principal, "/api/v1/app/:appId/msg/:msgId/endpoint", msg, { limit: 250 }),
      calls.read(principal, "/api/v1/app/:appId/attempt/msg/:msgId", msg, { limit: 250 }),
    ]);
    const byEndpoint = new Map<string, typeof attempts.data>();
    for (const a of attempts.data.slice().reverse()) {
      const list = byEndpoint.get(a.endpointId) ?? [];
      list.push(a);
      byEndpoint.set(a.endpointId, list);
    }
    return html`<section class="message" data-testid="message">
<h2>Message <code>${hit.id}</code></h2>
<dl class="facts">
  <dt>App</dt><dd>${hit.app_name} <span class="muted">(${hit.app_id})</span></dd>
  <dt>Event type</dt><dd>${hit.event_type}</dd>
  <dt>eventId</dt><dd>${hit.event_id ?? "none"}</dd>
  <dt>Created</dt><dd>${time(hit.created_at)}</dd>
</dl>
<h3>Payload <span class="muted">(sensitive fields masked)</span></h3>
${payloadView(
  redactor.text(payload.text),
  Buffer.byteLength(payload.text),
  dashboardPath(["messages", hit.id, "payload"]),
)}
<h3>Deliveries</h3>
<div id="deliveries"${refreshWhileWaiting(deliveries.data, dashboardPath(["messages", hit.id]))}>
${
  deliveries.data.length === 0
    ? html`<p class="muted">This message matched no endpoint.</p>`
    : deliveries.data.map((d) => {
        const timeline = byEndpoint.get(d.id) ?? [];
        return html`<article class="delivery" data-testid="delivery">
<h4><a href="${dashboardPath(["endpoints", d.id])}">${d.url}</a> ${deliveryBadge(d)}</h4>
<p class="muted">${d.attempts} attempts${d.nextAttempt ? html`; next ${time(d.nextAttempt)}` : ""}${d.deliveredAt ? html`; delivered ${time(d.deliveredAt)}` : ""}</p>
<ol class="timeline" data-testid="attempt-timeline">${timeline.map(
          (a) => html`<li class="${a.statusText === "success" ? "success" : "failure"}">
  #${a.attemptNumber} ${time(a.timestamp)}: ${a.responseStatusCode ? `HTTP ${a.responseStatusCode}` : (a.errorKind ?? "error")}, ${ms(a.responseDurationMs)}${
    a.error ? html` <span class="muted">${clippedText(redactor.text(String(a.error)))}</span>` : ""
  }</li>`,
        )}</ol>
<form method="post" action="${dashboardPath(["messages", hit.id, "resend"])}" data-confirm="Send this message to this endpoint again?">
  <input type="hidden" name="${CSRF_FIELD}" value="${csrf}">
  <input type="hidden" name="endpoint_id" value="${d.id}">
  <button type="submit">Resend to this endpoint</button>
</form>
</article>`;
      })
}
</div>
</section>`;
  }

  const page = (
    reply: FastifyReply,
    session: ReturnType<typeof sessionOf>,
    q: string,
    content: Html,
    notice: string | null = null,
  ) =>
    sendPage(reply, {
      title: "Message lookup",
      principal: session.principal,
      csrfToken: session.csrfToken,
      active: "/dashboard/messages",
      body: html`<h1>Message lookup</h1>
${notice && html`<p class="notice" role="status">${notice}</p>`}
<form class="filters" method="get" action="/dashboard/messages" role="search" aria-label="Find a message">
  <label>Message id or eventId<input name="q" value="${q}" maxlength="256" size="40" required></label>
  <button type="submit">Look up</button>
</form>
${content}`,
    });

  app.get("/messages", { schema: { hide: true } }, async (request, reply) => {
    const session = sessionOf(request);
    const q = (queryStrings(request.query).q ?? "").trim().slice(0, 256);
    if (!q) return page(reply, session, "", html``);
    const hits = await lookUpMessages(pool, q, ownApp(session.principal));
    let content: Html;
    if (hits.length === 0)
      content = html`<p role="status">No message has the id or eventId <code>${q}</code>.</p>`;
    else if (hits.length === 1)
      content = await detail(session.principal, session.csrfToken, hits[0]!);
    else
      content = html`<p>${hits.length} messages have this eventId (one per app):</p><ul>${hits.map(
        (h) =>
          html`<li><a href="${dashboardPath(["messages", h.id])}">${h.id}</a> in ${h.app_name} (${h.event_type}, ${time(h.created_at)})</li>`,
      )}</ul>`;
    return page(reply, session, q, content);
  });

  const one = async (request: FastifyRequest<{ Params: { msgId: string } }>) => {
    const session = sessionOf(request);
    const hit = (await lookUpMessages(pool, request.params.msgId, ownApp(session.principal))).find(
      (h) => h.id === request.params.msgId,
    );
    if (!hit) throw notFound("message");
    return { session, hit };
  };

  app.get<{ Params: { msgId: string } }>(
    "/messages/:msgId",
    { schema: { hide: true } },
    async (request, reply) => {
      const { session, hit } = await one(request);
      const done =
        queryStrings(request.query).done === "resent" ? "Resent: a new delivery is queued." : null;
      return page(
        reply,
        session,
        hit.id,
        await detail(session.principal, session.csrfToken, hit),
        done,
      );
    },
  );

  app.get<{ Params: { msgId: string } }>(
    "/messages/:msgId/payload",
    { schema: { hide: true } },
    async (request, reply) => {
      const { session, hit } = await one(request);
      const messageApi = `/api/v1/app/${encodeURIComponent(hit.app_id)}/msg/${encodeURIComponent(hit.id)}`;
      return sendPayload(reply, await storedPayload(calls, session.principal, messageApi));
    },
  );

  app.post<{ Params: { msgId: string } }>(
    "/messages/:msgId/resend",
    { schema: { hide: true } },
    async (request, reply) => {
      const { session, hit } = await one(request);
      const endpointId = field(request.body, "endpoint_id");
      if (!endpointId) throw notFound("endpoint");
      const res = await calls.call(
        session.principal,
        "POST",
        `/api/v1/app/${encodeURIComponent(hit.app_id)}/msg/${encodeURIComponent(hit.id)}/endpoint/${encodeURIComponent(endpointId)}/resend`,
      );
      if (res.status >= 400) throw answerError(res);
      return reply.redirect(`${dashboardPath(["messages", hit.id])}?done=resent`, 303);
    },
  );
}
