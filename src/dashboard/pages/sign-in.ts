/**
 * GET/POST /dashboard/sign-in, POST /dashboard/sign-out (docs/dashboard.md, "Sessions").
 * The sign-in form is protected by a double-submit token (a random value in a cookie and
 * in the form), sign-out by the session's CSRF token like every other action.
 */
import { timingSafeEqual } from "node:crypto";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { DashboardDeps } from "../context.ts";
import { CSRF_FIELD, CsrfError, checkOrigin, randomToken } from "../csrf.ts";
import { html } from "../html.ts";
import { sendPage } from "../layout.ts";
import { cookieHeader, readCookie, SESSION_COOKIE, SIGN_IN_COOKIE, setCookie } from "../session.ts";

/** Where to go after sign-in: a dashboard path of this site only (no open redirect). */
export function safeNext(next: unknown): string {
  if (typeof next !== "string" || next.length > 2048) return "/dashboard";
  if (!/^\/dashboard(?:[/?#]|$)/.test(next) || next.startsWith("/dashboard/sign-")) {
    return "/dashboard";
  }
  return next;
}

function form(
  request: FastifyRequest,
  reply: FastifyReply,
  o: { next: string; problem: string | null; status: number; publicUrl: string | undefined },
) {
  const { next, problem, status, publicUrl } = o;
  const token = randomToken();
  setCookie(
    reply,
    cookieHeader(request, SIGN_IN_COOKIE, token, { maxAgeSeconds: 3600, publicUrl }),
  );
  return sendPage(
    reply,
    {
      title: "Sign in",
      principal: null,
      body: html`<section class="sign-in">
<h1>Sign in</h1>
<p>Use an API key: an admin key sees every application, an app key only its own.</p>
${problem && html`<p class="error" role="alert">${problem}</p>`}
<form method="post" action="/dashboard/sign-in">
  <input type="hidden" name="${CSRF_FIELD}" value="${token}">
  <input type="hidden" name="next" value="${next}">
  <label for="key">API key</label>
  <input id="key" name="key" type="password" autocomplete="off" required maxlength="256" autofocus>
  <button type="submit">Sign in</button>
</form>
</section>`,
    },
    status,
  );
}

const same = (a: string, b: string) =>
  a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));

export function registerSignInPages(
  app: FastifyInstance,
  { sessions, config }: DashboardDeps,
): void {
  const { publicUrl } = config;
  app.get<{ Querystring: { next?: string } }>(
    "/sign-in",
    { schema: { hide: true } },
    async (request, reply) =>
      form(request, reply, {
        next: safeNext(request.query.next),
        problem: null,
        status: 200,
        publicUrl,
      }),
  );

  app.post<{ Body: Record<string, string> | undefined }>(
    "/sign-in",
    { schema: { hide: true } },
    async (request, reply) => {
      checkOrigin(request, publicUrl);
      const body = request.body ?? {};
      const cookie = readCookie(request, SIGN_IN_COOKIE);
      const field = typeof body[CSRF_FIELD] === "string" ? body[CSRF_FIELD] : "";
      if (!cookie || !field || !same(cookie, field)) {
        throw new CsrfError("the sign-in form's token is missing or does not match");
      }
      const next = safeNext(body.next);
      const key = typeof body.key === "string" ? body.key : "";
      const signedIn = key ? await sessions.signIn(key) : null;
      if (!signedIn) {
        return form(request, reply, {
          next,
          problem: "That key is not valid.",
          status: 401,
          publicUrl,
        });
      }
      setCookie(
        reply,
        cookieHeader(request, SESSION_COOKIE, signedIn.token, {
          maxAgeSeconds: sessions.ttlMs / 1000,
          publicUrl,
        }),
      );
      setCookie(reply, cookieHeader(request, SIGN_IN_COOKIE, "", { maxAgeSeconds: 0, publicUrl }));
      return reply.redirect(next, 303);
    },
  );

  app.post("/sign-out", { schema: { hide: true } }, async (request, reply) => {
    await sessions.signOut(request);
    setCookie(reply, cookieHeader(request, SESSION_COOKIE, "", { maxAgeSeconds: 0, publicUrl }));
    return reply.redirect("/dashboard/sign-in", 303);
  });
}
