/**
 * Portal sessions (docs/portal.md, "Links and sessions"). Opening an access link trades
 * its token (from the URL fragment, posted by the page's own script) for a session: a
 * random secret in an HttpOnly cookie scoped to /portal, stored hashed, valid exactly while
 * its link is (it expires with it, and revoking or expiring the link ends it). Looked up
 * on every request, never cached.
 *
 * The cookie is `SameSite=None; Secure; Partitioned` when the portal is served over https
 * (HOOKRELAY_PUBLIC_URL https, or a TLS request), so it works inside another site's iframe
 * (a partitioned cookie, CHIPS, belongs to that embedding only); over plain http, where a
 * browser refuses SameSite=None, it is `SameSite=Lax` and the portal works in a tab of its
 * own or framed by a page of the same site.
 */
import type { FastifyReply, FastifyRequest } from "fastify";
import type { Principal } from "../api/auth.ts";
import { csrfTokenFor } from "../dashboard/csrf.ts";
import { setCookie } from "../dashboard/session.ts";
import type { Queryable } from "../db/pool.ts";
import {
  deletePortalSession,
  insertPortalSession,
  livePortalToken,
  type PortalGrant,
  portalSessionGrant,
} from "../db/queries/portal-access.ts";
import {
  generatePortalSessionSecret,
  isPortalSessionShape,
  isPortalTokenShape,
  portalSecretHash,
} from "../security/portal-token.ts";

export const PORTAL_COOKIE = "hookrelay_portal";

declare module "fastify" {
  interface FastifyRequest {
    /** the portal session (set by the portal's hook), or null */
    portalSession: PortalSession | null;
  }
}
const COOKIE_PATH = "/portal";

/** A live portal session: the app it reaches and what it may do there. */
export interface PortalSession {
  appId: string;
  appName: string;
  tokenId: string;
  capabilities: readonly string[];
  expiresAt: Date;
  /** the cookie's secret */
  secret: string;
  /** the token every state-changing request of this session carries (dashboard/csrf.ts) */
  csrfToken: string;
  /** the API's principal for the same reach: an app-scoped one */
  principal: Principal;
}

const sessionOf = (grant: PortalGrant, secret: string): PortalSession => ({
  appId: grant.app_id,
  appName: grant.app_name,
  tokenId: grant.token_id,
  capabilities: grant.capabilities,
  expiresAt: grant.expires_at,
  secret,
  csrfToken: csrfTokenFor(secret),
  principal: { role: "app", keyId: `portal:${grant.token_id}`, appId: grant.app_id },
});

/** The values of the named cookie in a Cookie header, in order (there may be several). */
export function cookieValues(header: string | undefined, name: string): string[] {
  if (!header) return [];
  const out: string[] = [];
  for (const part of header.split(";")) {
    const eq = part.indexOf("=");
    if (eq < 0 || part.slice(0, eq).trim() !== name) continue;
    out.push(part.slice(eq + 1).trim());
  }
  return out;
}

function cookie(value: string, maxAgeSeconds: number, secure: boolean): string {
  const site = secure ? "SameSite=None; Secure; Partitioned" : "SameSite=Lax";
  return `${PORTAL_COOKIE}=${value}; Path=${COOKIE_PATH}; HttpOnly; Max-Age=${maxAgeSeconds}; ${site}`;
}

export interface PortalSessions {
  /** Opens a session for a live link's token and sets its cookie; null if the link is not live. */
  open(token: string, reply: FastifyReply, secure: boolean): Promise<PortalSession | null>;
  /** The request's live session, or null. */
  find(request: FastifyRequest): Promise<PortalSession | null>;
  /** Ends the session (the link stays usable) and clears the cookie. */
  close(session: PortalSession, reply: FastifyReply, secure: boolean): Promise<void>;
}

export function makePortalSessions(db: Queryable): PortalSessions {
  return {
    async open(token, reply, secure) {
      if (!isPortalTokenShape(token)) return null;
      const grant = await livePortalToken(db, portalSecretHash(token));
      if (!grant) return null;
      const secret = generatePortalSessionSecret();
      await insertPortalSession(db, portalSecretHash(secret), grant.token_id);
      const maxAge = Math.max(1, Math.ceil((grant.expires_at.getTime() - Date.now()) / 1000));
      setCookie(reply, cookie(secret, maxAge, secure));
      return sessionOf(grant, secret);
    },

    async find(request) {
      for (const value of cookieValues(request.headers.cookie, PORTAL_COOKIE)) {
        if (!isPortalSessionShape(value)) continue;
        const grant = await portalSessionGrant(db, portalSecretHash(value));
        if (grant) return sessionOf(grant, value);
      }
      return null;
    },

    async close(session, reply, secure) {
      await deletePortalSession(db, portalSecretHash(session.secret));
      setCookie(reply, cookie("", 0, secure));
    },
  };
}
