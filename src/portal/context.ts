/** What the portal's pages are given: its deps, the request's session, capability checks. */
import type { FastifyReply, FastifyRequest } from "fastify";
import type { ApiContext } from "../api/context.ts";
import { forbidden } from "../api/errors.ts";
import type { InProcessCalls, ReadParams, ReadResponse, ReadRoute } from "../api/in-process.ts";
import type { PortalCapability } from "../api/routes/portal-access.ts";
import type { PortalPageOptions } from "./layout.ts";
import type { PortalSession, PortalSessions } from "./session.ts";

export interface PortalOptions extends ApiContext {
  calls: InProcessCalls;
}

/** What every page module is given. */
export interface PortalDeps extends PortalOptions {
  sessions: PortalSessions;
  /** sends a page with the portal's shell and headers */
  page(reply: FastifyReply, o: PortalPageOptions, status?: number): FastifyReply;
  /**
   * a call into the API as the session's app, for writes (and answers passed on as they
   * are): its JSON answer, unread (`answerId` takes a written resource's id); a 4xx/5xx
   * answer is thrown as an ApiError
   */
  api(
    session: PortalSession,
    method: "GET" | "POST" | "PATCH" | "PUT" | "DELETE",
    url: string,
    body?: unknown,
  ): Promise<unknown>;
  /** a GET of one of the API's READ_ROUTES as the session's app, typed by its response schema */
  read<R extends ReadRoute>(
    session: PortalSession,
    route: R,
    params: ReadParams<R>,
    query?: Record<string, string | number | undefined>,
  ): Promise<ReadResponse<R>>;
}

/** The session of a request that passed the portal's hook. */
export function sessionOf(request: FastifyRequest): PortalSession {
  const session = request.portalSession;
  if (!session) throw new Error("portal route without a session");
  return session;
}

/** What a capability lets the link's holder do (Svix's AppPortalCapability). */
export const CAN = {
  manageEndpoints: ["ManageEndpoint"],
  viewSecret: ["ViewEndpointSecret", "ManageEndpointSecret", "ManageEndpoint"],
  rotateSecret: ["ManageEndpointSecret", "ManageEndpoint"],
  createAttempts: ["CreateAttempts"],
} as const satisfies Record<string, readonly PortalCapability[]>;

export const can = (session: PortalSession, what: keyof typeof CAN): boolean =>
  CAN[what].some((c) => session.capabilities.includes(c));

/** Throws a 403 unless the session's link grants `what`. */
export function requireCan(session: PortalSession, what: keyof typeof CAN): void {
  if (!can(session, what)) throw forbidden("this portal link does not allow that action");
}
