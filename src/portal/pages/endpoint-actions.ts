/**
 * What a portal user can do to one endpoint of the session's app (docs/portal.md,
 * "Pages"), each a POST with the session's CSRF token, each one call of the API's own
 * route, then a redirect to the page that shows the result:
 *   POST /portal/endpoints/{ep}                 save the edit form (PATCH; the SSRF guard checks a new URL)
 *   POST /portal/endpoints/{ep}/disable|enable
 *   POST /portal/endpoints/{ep}/delete
 *   POST /portal/endpoints/{ep}/secret          reveal the signing secret (a page, never cached)
 *   POST /portal/endpoints/{ep}/secret/rotate
 *   POST /portal/endpoints/{ep}/test            send a test event (send-example) to it only
 *   GET  /portal/endpoints/{ep}/chart-data      the latency chart's buckets (?hours=1, 6 or 24)
 */
import type { FastifyInstance } from "fastify";
import { answerId } from "../../api/in-process.ts";
import { chartHours, chartQuery } from "../../dashboard/chart-ranges.ts";
import { endpointBodyOfForm } from "../../dashboard/endpoint-form.ts";
import { field } from "../../dashboard/form-body.ts";
import { html } from "../../dashboard/html.ts";
import { type PortalDeps, requireCan, sessionOf } from "../context.ts";
import { portalPath } from "../layout.ts";
import { appApi, refusedForm } from "./endpoints.ts";

type P = { Params: { endpointId: string } };

export function registerEndpointActions(app: FastifyInstance, deps: PortalDeps): void {
  const detail = (id: string, done?: string) => portalPath(["endpoints", id], { done });

  app.post<P>("/endpoints/:endpointId", { schema: { hide: true } }, async (request, reply) => {
    const session = sessionOf(request);
    requireCan(session, "manageEndpoints");
    const ep = request.params.endpointId;
    try {
      const saved = await deps.api(
        session,
        "PATCH",
        appApi(session, "endpoint", ep),
        endpointBodyOfForm(request.body),
      );
      return reply.redirect(detail(answerId(saved), "saved"), 303);
    } catch (err) {
      return refusedForm(deps, reply, session, {
        title: "Edit endpoint",
        action: portalPath(["endpoints", ep]),
        body: request.body,
        err,
      });
    }
  });

  for (const [verb, disabled] of [
    ["disable", true],
    ["enable", false],
  ] as const) {
    app.post<P>(
      `/endpoints/:endpointId/${verb}`,
      { schema: { hide: true } },
      async (request, reply) => {
        const session = sessionOf(request);
        requireCan(session, "manageEndpoints");
        const saved = await deps.api(
          session,
          "PATCH",
          appApi(session, "endpoint", request.params.endpointId),
          { disabled },
        );
        return reply.redirect(detail(answerId(saved), `${verb}d`), 303);
      },
    );
  }

  app.post<P>(
    "/endpoints/:endpointId/delete",
    { schema: { hide: true } },
    async (request, reply) => {
      const session = sessionOf(request);
      requireCan(session, "manageEndpoints");
      await deps.api(session, "DELETE", appApi(session, "endpoint", request.params.endpointId));
      return reply.redirect(portalPath(["endpoints"], { done: "deleted" }), 303);
    },
  );

  app.post<P>(
    "/endpoints/:endpointId/secret",
    { schema: { hide: true } },
    async (request, reply) => {
      const session = sessionOf(request);
      requireCan(session, "viewSecret");
      const ep = request.params.endpointId;
      const e = await deps.read(session, "/api/v1/app/:appId/endpoint/:endpointId", {
        appId: session.appId,
        endpointId: ep,
      });
      const secret = await deps.read(session, "/api/v1/app/:appId/endpoint/:endpointId/secret", {
        appId: session.appId,
        endpointId: e.id,
      });
      return deps.page(reply, {
        session,
        csrfToken: session.csrfToken,
        title: "Signing secret",
        active: "/portal/endpoints",
        body: html`<h1>Signing secret</h1>
<p>For <code>${deps.redactor.url(e.url)}</code>.</p>
${
  secret.key.startsWith("whsec_") &&
  html`<h2>HMAC secret (<code>v1,</code> signatures)</h2>
<p>Keep it out of source control and logs.</p>
<pre data-secret>${secret.key}</pre>`
}
${
  secret.publicKey &&
  html`<h2>Ed25519 public key (<code>v1a,</code> signatures)</h2>
<p>Not a secret: it only verifies.</p>
<pre data-public-key>${secret.publicKey}</pre>`
}
<p><a href="${detail(e.id)}">Back to the endpoint</a></p>`,
      });
    },
  );

  app.post<P>(
    "/endpoints/:endpointId/secret/rotate",
    { schema: { hide: true } },
    async (request, reply) => {
      const session = sessionOf(request);
      requireCan(session, "rotateSecret");
      const e = await deps.read(session, "/api/v1/app/:appId/endpoint/:endpointId", {
        appId: session.appId,
        endpointId: request.params.endpointId,
      });
      await deps.api(session, "POST", appApi(session, "endpoint", e.id, "secret", "rotate"), {});
      return reply.redirect(detail(e.id, "rotated"), 303);
    },
  );

  app.post<P>("/endpoints/:endpointId/test", { schema: { hide: true } }, async (request, reply) => {
    const session = sessionOf(request);
    requireCan(session, "createAttempts");
    const sent = await deps.api(
      session,
      "POST",
      appApi(session, "endpoint", request.params.endpointId, "send-example"),
      { eventType: field(request.body, "eventType") || "hookrelay.ping" },
    );
    return reply.redirect(portalPath(["messages", answerId(sent)]), 303);
  });

  app.get<P>(
    "/endpoints/:endpointId/chart-data",
    { schema: { hide: true } },
    async (request, reply) => {
      const session = sessionOf(request);
      const e = await deps.read(session, "/api/v1/app/:appId/endpoint/:endpointId", {
        appId: session.appId,
        endpointId: request.params.endpointId,
      });
      // the page's range (?hours=1, 6 or 24) in its bucket; passed on as it is (the chart reads it)
      const range = chartQuery(chartHours(request.query, deps.config.health.windowMs));
      const query = new URLSearchParams({
        endpoint_id: e.id,
        hours: String(range.hours),
        bucket_minutes: String(range.bucket_minutes),
      });
      const buckets = await deps.api(session, "GET", `/api/v1/stats/buckets?${query}`);
      return reply.header("cache-control", "no-store").send(buckets);
    },
  );
}
