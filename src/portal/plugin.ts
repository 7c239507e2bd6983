/**
 * The tenant portal at /portal (docs/portal.md): server-rendered pages for one app's own
 * people, opened with an access link (api/routes/portal-access.ts), embeddable in the
 * operator's product. Every page and action calls the API's own routes in-process
 * (api/in-process.ts) as an app-scoped principal of the session's app, so validation,
 * tenant scoping (another app's ids are 404), the SSRF guard and side effects are the
 * API's. The shell, escaping, assets and CSRF are the dashboard's (src/dashboard).
 */
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { answerError } from "../api/in-process.ts";
import { checkCsrf } from "../dashboard/csrf.ts";
import { errorStatus } from "../dashboard/error-status.ts";
import { parseForm } from "../dashboard/form-body.ts";
import { html } from "../dashboard/html.ts";
import type { PortalDeps, PortalOptions } from "./context.ts";
import { sendPortalPage } from "./layout.ts";
import { registerAccessPages } from "./pages/access.ts";
import { registerAttemptPage } from "./pages/attempts.ts";
import { registerEgressPage } from "./pages/egress.ts";
import { registerEndpointActions } from "./pages/endpoint-actions.ts";
import { registerPortalOrderingActions } from "./pages/endpoint-ordering.ts";
import { registerEndpointReplayPages } from "./pages/endpoint-replay.ts";
import { registerEndpointPages } from "./pages/endpoints.ts";
import { registerEventTypePage } from "./pages/event-types.ts";
import { registerMessagePages } from "./pages/messages.ts";
import { makePortalSessions } from "./session.ts";

/** Pages reachable without a session: the link's landing page and its exchange. */
const PUBLIC_PATHS = new Set(["/portal", "/portal/", "/portal/session"]);

export async function registerPortal(app: FastifyInstance, options: PortalOptions): Promise<void> {
  const frameAncestors = options.config.portalFrameAncestors;
  const deps: PortalDeps = {
    ...options,
    sessions: makePortalSessions(options.pool),
    page: (reply, o, status) => sendPortalPage(reply, frameAncestors, o, status),
    async api(session, method, url, body) {
      const res = await options.calls.call(session.principal, method, url, body);
      if (res.status >= 400) throw answerError(res);
      return res.body;
    },
    read: (session, route, params, query) =>
      options.calls.read(session.principal, route, params, query),
  };

  await app.register(
    async (portal) => {
      portal.addContentTypeParser(
        "application/x-www-form-urlencoded",
        { parseAs: "buffer", bodyLimit: 64 * 1024 },
        (_request, body, done) => done(null, parseForm(body as Buffer)),
      );
      portal.decorateRequest("portalSession", null);

      portal.addHook("onRequest", async (request, reply) => {
        const path = request.url.split("?")[0]!;
        if (PUBLIC_PATHS.has(path)) return;
        const session = await deps.sessions.find(request);
        if (session) {
          request.portalSession = session;
          return;
        }
        return deps.page(reply, { session: null, title: "Link expired", body: expiredBody() }, 401);
      });
      // After the body is parsed: every state-changing request carries the session's token.
      portal.addHook("preHandler", async (request) => {
        if (request.method === "GET" || request.method === "HEAD") return;
        const session = request.portalSession;
        if (session) checkCsrf(request, session.csrfToken, options.config.publicUrl);
      });

      portal.setErrorHandler((err: FastifyError | Error, request, reply) =>
        errorPage(deps, err, request, reply),
      );
      portal.setNotFoundHandler((request, reply) =>
        deps.page(
          reply,
          {
            session: request.portalSession,
            csrfToken: request.portalSession?.csrfToken,
            title: "Not found",
            body: html`<h1>Not found</h1><p>There is no page at <code>${request.url.split("?")[0]}</code>.</p>`,
          },
          404,
        ),
      );

      registerAccessPages(portal, deps);
      registerEndpointPages(portal, deps);
      registerEndpointActions(portal, deps);
      registerEndpointReplayPages(portal, deps);
      registerPortalOrderingActions(portal, deps);
      registerMessagePages(portal, deps);
      registerAttemptPage(portal, deps);
      registerEventTypePage(portal, deps);
      registerEgressPage(portal, deps);
    },
    { prefix: "/portal" },
  );
}

export const expiredBody = () =>
  html`<h1>This link has expired</h1>
<p>Portal links are short-lived. Open the webhooks page again from the application that sent you here to get a new one.</p>`;

function errorPage(
  deps: PortalDeps,
  err: FastifyError | Error,
  request: FastifyRequest,
  reply: FastifyReply,
) {
  const { status, detail } = errorStatus(err, request, {
    internalDetail: "Something went wrong on our side.",
    logMessage: "portal request failed",
  });
  return deps.page(
    reply,
    {
      session: request.portalSession,
      csrfToken: request.portalSession?.csrfToken,
      title: `Error ${status}`,
      body: html`<h1>Error ${status}</h1><p class="error" role="alert">${detail}</p>`,
    },
    status,
  );
}
