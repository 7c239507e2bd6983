/**
 * CSRF protection for every state-changing dashboard request (docs/dashboard.md, "CSRF"),
 * three layers deep:
 *  - the session cookie is SameSite=Strict, so another site's form does not carry it;
 *  - a POST whose Origin header names another origin is refused;
 *  - every POST carries a token, in the form field `_csrf` or the header `x-csrf-token`,
 *    that only a page of this session can know: a hash of the session's secret token
 *    (which lives only in the HttpOnly cookie). Before sign-in, the sign-in form uses a
 *    double-submit token: a random value in a cookie and the same value in the form.
 */
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import type { FastifyRequest } from "fastify";
import { HookRelayError } from "../errors.ts";

export const CSRF_FIELD = "_csrf";
export const CSRF_HEADER = "x-csrf-token";

/** A state-changing request without a valid token or from another origin. */
export class CsrfError extends HookRelayError {
  constructor(detail: string) {
    super("csrf_refused", detail);
  }
}

/** The CSRF token of a session, derived from its secret token. */
export const csrfTokenFor = (sessionToken: string): string =>
  createHash("sha256").update(`hookrelay-csrf:${sessionToken}`).digest("base64url");

/** A random token (the sign-in form's double-submit value). */
export const randomToken = (): string => randomBytes(32).toString("base64url");

const sameString = (a: string, b: string): boolean => {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
};

/** The token a request presents: the form field, else the header. */
export function presentedToken(request: FastifyRequest): string | null {
  const body = request.body as Record<string, unknown> | undefined | null;
  const field = body && typeof body === "object" ? body[CSRF_FIELD] : undefined;
  if (typeof field === "string" && field !== "") return field;
  const header = request.headers[CSRF_HEADER];
  return typeof header === "string" && header !== "" ? header : null;
}

/**
 * Throws CsrfError unless the request comes from this origin (when the browser says): the
 * Origin's host is the request's Host, or the Origin is HOOKRELAY_PUBLIC_URL's (a proxy in
 * front may pass on a Host of its own).
 */
export function checkOrigin(request: FastifyRequest, publicUrl: string | undefined): void {
  const origin = request.headers.origin;
  if (origin === undefined) return;
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    throw new CsrfError("the request's Origin is not a URL");
  }
  if (url.host === request.headers.host) return;
  if (publicUrl !== undefined && url.origin === new URL(publicUrl).origin) return;
  throw new CsrfError("the request comes from another origin");
}

/** Throws CsrfError unless the request carries `expected` (and comes from this origin). */
export function checkCsrf(
  request: FastifyRequest,
  expected: string,
  publicUrl: string | undefined,
): void {
  checkOrigin(request, publicUrl);
  const token = presentedToken(request);
  if (token === null) throw new CsrfError("the request carries no CSRF token");
  if (!sameString(token, expected)) throw new CsrfError("the request's CSRF token is not valid");
}
