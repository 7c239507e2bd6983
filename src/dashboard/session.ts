/**
 * Dashboard sign-in (docs/dashboard.md, "Sessions"): an API key typed into a form is
 * exchanged for a session cookie. The cookie carries a random 256-bit token; PostgreSQL
 * keeps only its SHA-256 (dashboard_sessions), with the principal the key stood for, so an
 * admin key sees everything and an app key only its app, exactly as on the API. The cookie
 * is HttpOnly, SameSite=Strict, Secure when the request came over https, limited to
 * /dashboard and expires with the session; signing out deletes the row.
 *
 * A session never outlives its key: revoking the key (or changing HOOKRELAY_ADMIN_KEY)
 * ends it at its next request.
 */
import { createHash, randomBytes } from "node:crypto";
import type { FastifyReply, FastifyRequest } from "fastify";
import { type CheckKey, hashKey, type Principal } from "../api/auth.ts";
import type { Queryable } from "../db/pool.ts";
import {
  deleteDashboardSession,
  insertDashboardSession,
  liveDashboardSession,
} from "../db/queries/dashboard-sessions.ts";
import { csrfTokenFor } from "./csrf.ts";

export const SESSION_COOKIE = "hookrelay_session";
export const SIGN_IN_COOKIE = "hookrelay_sign_in";

export interface DashboardSession {
  principal: Principal;
  /** the token every state-changing request of this session must carry */
  csrfToken: string;
  expiresAt: Date;
}

declare module "fastify" {
  interface FastifyRequest {
    /** the signed-in dashboard session (set by the dashboard's hook), or null */
    dashboardSession: DashboardSession | null;
  }
}

const tokenHash = (token: string) => createHash("sha256").update(token).digest("hex");

/** The value of one cookie of a request (the first of that name), or null. */
export function readCookie(request: FastifyRequest, name: string): string | null {
  const header = request.headers.cookie;
  if (!header) return null;
  for (const part of header.split(";")) {
    const eq = part.indexOf("=");
    if (eq < 0 || part.slice(0, eq).trim() !== name) continue;
    const value = part.slice(eq + 1).trim();
    try {
      return decodeURIComponent(value);
    } catch {
      return null;
    }
  }
  return null;
}

/**
 * Whether browsers reach this process over https, so its cookies must be Secure: a TLS
 * request to this process, or HOOKRELAY_PUBLIC_URL saying https (the usual case: TLS ends
 * at a proxy, and no proxy's headers are trusted).
 */
export const servedOverHttps = (request: FastifyRequest, publicUrl: string | undefined): boolean =>
  request.protocol === "https" || (publicUrl?.startsWith("https:") ?? false);

/** A Set-Cookie value: HttpOnly, SameSite=Strict, for `path`, Secure over https. */
export function cookieHeader(
  request: FastifyRequest,
  name: string,
  value: string,
  options: { maxAgeSeconds: number; path?: string; publicUrl: string | undefined },
): string {
  return [
    `${name}=${encodeURIComponent(value)}`,
    `Path=${options.path ?? "/dashboard"}`,
    `Max-Age=${Math.max(0, Math.floor(options.maxAgeSeconds))}`,
    "HttpOnly",
    "SameSite=Strict",
    ...(servedOverHttps(request, options.publicUrl) ? ["Secure"] : []),
  ].join("; ");
}

/** Appends a Set-Cookie header (a reply may set several). */
export function setCookie(reply: FastifyReply, cookie: string): void {
  const prior = reply.getHeader("set-cookie");
  const list = prior === undefined ? [] : Array.isArray(prior) ? prior : [String(prior)];
  reply.header("set-cookie", [...list, cookie]);
}

export interface Sessions {
  /** exchanges a key for a session: the cookie's token, or null for a key that is not valid */
  signIn(key: string): Promise<{ token: string; session: DashboardSession } | null>;
  /** the request's live session, or null */
  read(request: FastifyRequest): Promise<DashboardSession | null>;
  /** ends the request's session (if any) */
  signOut(request: FastifyRequest): Promise<void>;
  ttlMs: number;
}

export function makeSessions(options: {
  db: Queryable;
  checkKey: CheckKey;
  /** HOOKRELAY_ADMIN_KEY, whose sessions live while it stays configured */
  envAdminKey: string | undefined;
  /** ttlMs: how long a session lasts from sign-in */
  ttlMs: number;
}): Sessions {
  const { db, checkKey, ttlMs } = options;
  const envKeyHash = options.envAdminKey ? hashKey(options.envAdminKey) : null;
  return {
    ttlMs,
    async signIn(key) {
      const principal = await checkKey(key.trim());
      if (!principal) return null;
      const token = randomBytes(32).toString("base64url");
      const expiresAt = await insertDashboardSession(db, {
        tokenHash: tokenHash(token),
        keyHash: hashKey(key.trim()),
        keyId: principal.keyId,
        role: principal.role,
        appId: principal.role === "app" ? principal.appId : null,
        ttlMs,
      });
      return { token, session: { principal, csrfToken: csrfTokenFor(token), expiresAt } };
    },
    async read(request) {
      const token = readCookie(request, SESSION_COOKIE);
      if (!token || token.length > 128) return null;
      const row = await liveDashboardSession(db, tokenHash(token), envKeyHash);
      if (!row) return null;
      const principal: Principal =
        row.role === "admin"
          ? { role: "admin", keyId: row.key_id }
          : { role: "app", keyId: row.key_id, appId: row.app_id! };
      return { principal, csrfToken: csrfTokenFor(token), expiresAt: row.expires_at };
    },
    async signOut(request) {
      const token = readCookie(request, SESSION_COOKIE);
      if (token && token.length <= 128) await deleteDashboardSession(db, tokenHash(token));
    },
  };
}
