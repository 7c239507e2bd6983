/**
 * Opening and closing the portal (docs/portal.md, "Links and sessions"):
 *   GET  /portal/          the link's landing page; its script (portal.js) takes the token
 *                          from the fragment, removes it from the address bar and history,
 *                          and posts it to /portal/session
 *   POST /portal/session   { token } as JSON: a session cookie for a live link (204), else 401
 *   POST /portal/sign-out  ends this browser's session (the link stays usable until it expires)
 */
import type { FastifyInstance } from "fastify";
import { apiError } from "../../api/errors.ts";
import { assetUrl } from "../../dashboard/assets.ts";
import { CsrfError, checkOrigin } from "../../dashboard/csrf.ts";
import { html } from "../../dashboard/html.ts";
import { servedOverHttps } from "../../dashboard/session.ts";
import { type PortalDeps, sessionOf } from "../context.ts";

export function registerAccessPages(app: FastifyInstance, deps: PortalDeps): void {
  const { sessions, config } = deps;

  app.get("/", { schema: { hide: true } }, async (_request, reply) =>
    deps.page(reply, {
      session: null,
      title: "Opening",
      body: html`<div id="portal-landing">
<h1>Webhooks</h1>
<p id="portal-status" role="status">Opening your webhooks portal…</p>
<noscript><p class="error">The portal needs JavaScript to open its link.</p></noscript>
</div>
<script src="${assetUrl("portal.js")}" defer></script>`,
    }),
  );

  app.post<{ Body: { token: string } }>(
    "/session",
    {
      schema: {
        hide: true,
        body: {
          type: "object",
          additionalProperties: false,
          required: ["token"],
          properties: { token: { type: "string", maxLength: 128 } },
        },
      },
    },
    async (request, reply) => {
      // No session yet, so no CSRF token: JSON only (another site's form cannot send it
      // without a CORS preflight, which this server never grants) and this origin only.
      if (!/^application\/json\b/i.test(request.headers["content-type"] ?? ""))
        throw new CsrfError("the link's token must be posted as JSON");
      checkOrigin(request, config.publicUrl);
      const secure = servedOverHttps(request, config.publicUrl);
      const session = await sessions.open(request.body.token, reply, secure);
      if (!session) throw apiError("unauthorized", "this portal link has expired or was revoked");
      return reply.code(204).send();
    },
  );

  app.post("/sign-out", { schema: { hide: true } }, async (request, reply) => {
    await sessions.close(sessionOf(request), reply, servedOverHttps(request, config.publicUrl));
    return deps.page(reply, {
      session: null,
      title: "Signed out",
      body: html`<h1>Signed out</h1><p>Open the webhooks page again from the application that sent you here.</p>`,
    });
  });
}
