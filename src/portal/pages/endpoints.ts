/**
 * The portal's endpoint pages (docs/portal.md, "Pages"), all read through the API as the
 * session's app:
 *   GET  /portal/endpoints               the app's endpoints with health (success rate, p95, circuit)
 *   GET  /portal/endpoints/new           the add form
 *   POST /portal/endpoints               add (the API checks the URL with the SSRF guard)
 *   GET  /portal/endpoints/{ep}          one endpoint: settings, health, latency chart,
 *                                        secret, test event, replay (endpoint-replay.ts),
 *                                        recent attempts, actions (the body:
 *                                        endpoint-detail.ts; health and chart:
 *                                        endpoint-health-view.ts)
 *   GET  /portal/endpoints/{ep}/edit     the edit form (src/dashboard/endpoint-form.ts)
 */
import type { FastifyInstance, FastifyReply } from "fastify";
import { answerId } from "../../api/in-process.ts";
import { chartHours } from "../../dashboard/chart-ranges.ts";
import {
  CATALOG_QUERY,
  type CatalogEntry,
  type EndpointFormValues,
  endpointBodyOfForm,
  endpointForm,
  NEW_ENDPOINT,
  valuesOfEndpoint,
  valuesOfForm,
} from "../../dashboard/endpoint-form.ts";
import { headersFacts } from "../../dashboard/endpoint-headers-facts.ts";
import { type Html, html } from "../../dashboard/html.ts";
import { ownKey } from "../../dashboard/query.ts";
import { EITHER_MODE_TEXT } from "../../domain/while-disabled.ts";
import { ApiError } from "../../errors.ts";
import { can, type PortalDeps, requireCan, sessionOf } from "../context.ts";
import { portalPath } from "../layout.ts";
import type { PortalSession } from "../session.ts";
import { badge, eventTypesText, ms, percent } from "../views.ts";
import { endpointDetail } from "./endpoint-detail.ts";
import { endpointHealthSection } from "./endpoint-health-view.ts";
import { portalBlockedKeysSection } from "./endpoint-ordering.ts";
import { portalReplaySection } from "./endpoint-replay.ts";

/** /api/v1/app/{the session's app}/... with each segment percent-encoded. */
export const appApi = (session: PortalSession, ...segments: string[]) =>
  ["/api/v1/app", session.appId, ...segments]
    .map((s, i) => (i ? encodeURIComponent(s) : s))
    .join("/");

/** Fixed notices after an action (never text from the request). */
export const NOTICES: Record<string, string> = {
  created: "Endpoint added.",
  saved: "Changes saved.",
  // the disabled-endpoint contract (domain/while-disabled.ts)
  disabled: `Endpoint disabled: ${EITHER_MODE_TEXT}.`,
  enabled: "Endpoint enabled.",
  deleted: "Endpoint deleted.",
  rotated: "Signing secret rotated; the previous one keeps signing for 24 hours.",
  resent: "Message queued for delivery again.",
  "key-retry": "The key's first message is due again now; the rest of its key follow it in order.",
  "key-skip": "The key's first message was skipped (canceled); the next message of its key goes.",
};
export const notice = (done: unknown): Html | null => {
  const key = ownKey(NOTICES, done);
  const text = key ? NOTICES[key] : undefined;
  return text ? html`<p class="notice" role="status">${text}</p>` : null;
};

export async function catalog(deps: PortalDeps, session: PortalSession): Promise<CatalogEntry[]> {
  const page = await deps.read(session, "/api/v1/event-type", {}, CATALOG_QUERY);
  return page.data;
}

/** The add or edit form of the session's app. */
const portalForm = (
  session: PortalSession,
  action: string,
  values: EndpointFormValues,
  catalog: CatalogEntry[],
  error: string | null,
) =>
  endpointForm({
    action,
    csrfField: "_csrf",
    csrfToken: session.csrfToken,
    cancelHref: "/portal/endpoints",
    values,
    catalog,
    error,
  });

/** Re-renders a form after the API refused it (4xx): the values kept, the reason shown. */
export async function refusedForm(
  deps: PortalDeps,
  reply: FastifyReply,
  session: PortalSession,
  o: { title: string; action: string; body: unknown; err: unknown },
) {
  if (!(o.err instanceof ApiError) || o.err.status >= 500 || o.err.status === 404) throw o.err;
  return deps.page(
    reply,
    {
      session,
      csrfToken: session.csrfToken,
      title: o.title,
      active: "/portal/endpoints",
      body: html`<h1>${o.title}</h1>${portalForm(
        session,
        o.action,
        valuesOfForm(o.body),
        await catalog(deps, session),
        o.err.message,
      )}`,
    },
    o.err.status,
  );
}

export function registerEndpointPages(app: FastifyInstance, deps: PortalDeps): void {
  const { redactor } = deps;

  app.get<{ Querystring: { iterator?: string; done?: string } }>(
    "/endpoints",
    { schema: { hide: true } },
    async (request, reply) => {
      const session = sessionOf(request);
      const it = request.query.iterator;
      const query = { limit: 100, iterator: typeof it === "string" ? it : undefined };
      const page = await deps.read(
        session,
        "/api/v1/app/:appId/endpoint",
        { appId: session.appId },
        query,
      );
      // the same page of the same order (both list by endpoint id, ascending)
      const health = await deps.read(
        session,
        "/api/v1/health/endpoints",
        {},
        { ...query, app_id: session.appId },
      );
      const byId = new Map(health.data.map((h) => [h.endpointId, h]));
      const rows = page.data.map((e) => {
        const h = byId.get(e.id);
        return html`<tr>
<td class="url"><a href="${portalPath(["endpoints", e.id])}">${redactor.url(e.url)}</a></td>
<td class="text hide-narrow">${e.description}</td>
<td class="text hide-narrow">${eventTypesText(e.eventTypes)}</td>
<td>${e.disabled ? badge("disabled") : badge("ok", "enabled")}</td>
<td>${h ? badge(h.circuit.state) : "–"}</td>
<td class="num">${percent(h?.latency.successRate)}</td>
<td class="num">${ms(h?.latency.p95Ms)}</td>
<td class="num hide-narrow">${h?.queue.pending ?? 0}</td>
</tr>`;
      });
      return deps.page(reply, {
        session,
        csrfToken: session.csrfToken,
        title: "Endpoints",
        active: "/portal/endpoints",
        body: html`<h1>Endpoints</h1>
${notice(request.query.done)}
${can(session, "manageEndpoints") && html`<p><a class="button primary" href="/portal/endpoints/new">Add endpoint</a></p>`}
${
  page.data.length === 0
    ? html`<p class="muted">No endpoints yet.</p>`
    : html`<div class="table-wrap"><table>
<thead><tr><th>URL</th><th class="hide-narrow">Description</th><th class="hide-narrow">Event types</th><th>State</th><th>Circuit</th><th class="num">Success (24 h)</th><th class="num">p95</th><th class="num hide-narrow">Pending</th></tr></thead>
<tbody>${rows}</tbody></table></div>`
}
${!page.done && html`<p class="pager"><a href="${portalPath(["endpoints"], { iterator: page.iterator })}">Next page</a></p>`}`,
      });
    },
  );

  app.get("/endpoints/new", { schema: { hide: true } }, async (request, reply) => {
    const session = sessionOf(request);
    requireCan(session, "manageEndpoints");
    return deps.page(reply, {
      session,
      csrfToken: session.csrfToken,
      title: "Add endpoint",
      active: "/portal/endpoints",
      body: html`<h1>Add endpoint</h1>${portalForm(
        session,
        "/portal/endpoints",
        NEW_ENDPOINT,
        await catalog(deps, session),
        null,
      )}`,
    });
  });

  app.post("/endpoints", { schema: { hide: true } }, async (request, reply) => {
    const session = sessionOf(request);
    requireCan(session, "manageEndpoints");
    try {
      const made = await deps.api(
        session,
        "POST",
        appApi(session, "endpoint"),
        endpointBodyOfForm(request.body),
      );
      return reply.redirect(portalPath(["endpoints", answerId(made)], { done: "created" }), 303);
    } catch (err) {
      return refusedForm(deps, reply, session, {
        title: "Add endpoint",
        action: "/portal/endpoints",
        body: request.body,
        err,
      });
    }
  });

  app.get<{ Params: { endpointId: string }; Querystring: { done?: string } }>(
    "/endpoints/:endpointId",
    { schema: { hide: true } },
    async (request, reply) => {
      const session = sessionOf(request);
      const ep = request.params.endpointId;
      const hours = chartHours(request.query, deps.config.health.windowMs);
      const e = await deps.read(session, "/api/v1/app/:appId/endpoint/:endpointId", {
        appId: session.appId,
        endpointId: ep,
      });
      const ids = { appId: session.appId, endpointId: e.id };
      const h = await deps.read(session, "/api/v1/app/:appId/endpoint/:endpointId/health", ids);
      const attempts = await deps.read(
        session,
        "/api/v1/app/:appId/attempt/endpoint/:endpointId",
        ids,
        { limit: 20 },
      );
      // the custom headers, sensitive values masked by the API
      const headers = await deps.read(
        session,
        "/api/v1/app/:appId/endpoint/:endpointId/headers",
        ids,
      );
      const types = await catalog(deps, session);
      const blocked = await portalBlockedKeysSection(deps, session, e.id);
      const replay = html`${blocked}${await portalReplaySection(deps, session, {
        endpointId: e.id,
        limits: h.limits,
      })}`;
      return deps.page(reply, {
        session,
        csrfToken: session.csrfToken,
        title: "Endpoint",
        active: "/portal/endpoints",
        charts: true,
        body: endpointDetail(
          session,
          e,
          endpointHealthSection(e.id, h, hours, deps.config.health.windowMs),
          attempts.data,
          types,
          redactor.url,
          notice(request.query.done),
          replay,
          headersFacts(headers),
        ),
      });
    },
  );

  app.get<{ Params: { endpointId: string } }>(
    "/endpoints/:endpointId/edit",
    { schema: { hide: true } },
    async (request, reply) => {
      const session = sessionOf(request);
      requireCan(session, "manageEndpoints");
      const e = await deps.read(session, "/api/v1/app/:appId/endpoint/:endpointId", {
        appId: session.appId,
        endpointId: request.params.endpointId,
      });
      return deps.page(reply, {
        session,
        csrfToken: session.csrfToken,
        title: "Edit endpoint",
        active: "/portal/endpoints",
        body: html`<h1>Edit endpoint</h1>${portalForm(
          session,
          portalPath(["endpoints", e.id]),
          valuesOfEndpoint(e),
          await catalog(deps, session),
          null,
        )}`,
      });
    },
  );
}
