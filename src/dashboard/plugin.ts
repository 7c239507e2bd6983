/**
 * The operator dashboard at /dashboard (docs/dashboard.md): server-rendered pages behind a
 * session, built on the API. It registers the static assets, the sign-in, and one module
 * per page; every page reads through the API routes in-process (api/in-process.ts) as the
 * signed-in principal, or through ops/ functions scoped to that principal where no route
 * gives the view a page needs.
 */
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { registerAssetRoutes } from "./assets.ts";
import type { DashboardDeps, DashboardOptions } from "./context.ts";
import { checkCsrf } from "./csrf.ts";
import { errorStatus } from "./error-status.ts";
import { parseForm } from "./form-body.ts";
import { html } from "./html.ts";
import { sendPage } from "./layout.ts";
import { registerAttemptListPage } from "./pages/attempt-list.ts";
import { registerChartData } from "./pages/chart-data.ts";
import { registerDeadLetterPages } from "./pages/dead-letters.ts";
import { registerEndpointPages } from "./pages/endpoint.ts";
import { registerEndpointEditPage } from "./pages/endpoint-edit.ts";
import { registerEndpointOrderingActions } from "./pages/endpoint-ordering.ts";
import { registerEndpointReplayPages } from "./pages/endpoint-replay.ts";
import { registerEndpointListPage } from "./pages/endpoints.ts";
import { registerMessageListPages } from "./pages/message-list.ts";
import { registerMessagePages } from "./pages/messages.ts";
import { registerOverviewPage } from "./pages/overview.ts";
import { registerSignInPages } from "./pages/sign-in.ts";
import { makeSessions } from "./session.ts";

const PUBLIC_PATHS = new Set(["/dashboard/sign-in"]);

export async function registerDashboard(
  app: FastifyInstance,
  options: DashboardOptions,
): Promise<void> {
  registerAssetRoutes(app);
  app.get("/", { schema: { hide: true } }, async (_request, reply) =>
    reply.redirect("/dashboard", 302),
  );
  const sessions = makeSessions({
    db: options.pool,
    checkKey: options.checkKey,
    envAdminKey: options.config.adminKey,
    ttlMs: options.config.dashboardSessionTtlMs,
  });
  const deps: DashboardDeps = { ...options, sessions };

  await app.register(
    async (dash) => {
      dash.addContentTypeParser(
        "application/x-www-form-urlencoded",
        { parseAs: "buffer", bodyLimit: 64 * 1024 },
        (_request, body, done) => done(null, parseForm(body as Buffer)),
      );
      dash.decorateRequest("dashboardSession", null);

      dash.addHook("onRequest", async (request, reply) => {
        const path = request.url.split("?")[0]!;
        if (PUBLIC_PATHS.has(path)) return;
        const session = await sessions.read(request);
        if (session) {
          request.dashboardSession = session;
          return;
        }
        if (request.headers["hx-request"] === "true") {
          // an htmx refresh of a part of a page: the whole page goes to sign-in (a redirect
          // would be followed and its answer swapped in, and the part would just vanish)
          const page = request.headers["hx-current-url"];
          const at = typeof page === "string" ? new URL(page, "http://x") : null;
          const next = at ? `${at.pathname}${at.search}` : "/dashboard";
          return reply
            .code(401)
            .header("hx-redirect", `/dashboard/sign-in?next=${encodeURIComponent(next)}`)
            .send();
        }
        if (request.method === "GET" || request.method === "HEAD") {
          return reply.redirect(`/dashboard/sign-in?next=${encodeURIComponent(request.url)}`, 303);
        }
        return sendPage(
          reply,
          {
            title: "Signed out",
            principal: null,
            body: html`<h1>Signed out</h1><p>Your session has ended. <a href="/dashboard/sign-in">Sign in</a> again.</p>`,
          },
          401,
        );
      });
      // After the body is parsed: every state-changing request carries the session's token.
      dash.addHook("preHandler", async (request) => {
        if (request.method === "GET" || request.method === "HEAD") return;
        const session = request.dashboardSession;
        if (session) checkCsrf(request, session.csrfToken, options.config.publicUrl);
      });

      dash.setErrorHandler((err: FastifyError | Error, request, reply) =>
        errorPage(err, request, reply),
      );
      dash.setNotFoundHandler((request, reply) =>
        sendPage(
          reply,
          {
            title: "Not found",
            principal: request.dashboardSession?.principal ?? null,
            csrfToken: request.dashboardSession?.csrfToken,
            body: html`<h1>Not found</h1><p>There is no page at <code>${request.url.split("?")[0]}</code>.</p>`,
          },
          404,
        ),
      );

      registerSignInPages(dash, deps);
      registerOverviewPage(dash, deps);
      registerChartData(dash, deps);
      registerEndpointListPage(dash, deps);
      registerEndpointPages(dash, deps);
      registerEndpointEditPage(dash, deps);
      registerEndpointReplayPages(dash, deps);
      registerEndpointOrderingActions(dash, deps);
      registerDeadLetterPages(dash, deps);
      registerMessagePages(dash, deps);
      registerMessageListPages(dash, deps);
      registerAttemptListPage(dash, deps);
    },
    { prefix: "/dashboard" },
  );
}

function errorPage(err: FastifyError | Error, request: FastifyRequest, reply: FastifyReply) {
  const { status, detail } = errorStatus(err, request, {
    internalDetail: "Something went wrong on our side; the error is in the server's log.",
    logMessage: "dashboard request failed",
  });
  return sendPage(
    reply,
    {
      title: `Error ${status}`,
      principal: request.dashboardSession?.principal ?? null,
      csrfToken: request.dashboardSession?.csrfToken,
      body: html`<h1>Error ${status}</h1><p class="error" role="alert">${detail}</p>`,
    },
    status,
  );
}
