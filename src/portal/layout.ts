/**
 * The portal's page shell: the dashboard's (dashboard/layout.ts) with the portal's menu and
 * sign-out, and the one difference in headers: the portal may be framed by the origins
 * HOOKRELAY_PORTAL_FRAME_ANCESTORS names (docs/portal.md, "Embedding").
 */
import type { FastifyReply } from "fastify";
import { type NavItem, type PageOptions, pageHeaders, renderPage } from "../dashboard/layout.ts";
import type { PortalSession } from "./session.ts";

export const PORTAL_NAV: readonly NavItem[] = [
  { href: "/portal/endpoints", label: "Endpoints" },
  { href: "/portal/messages", label: "Delivery log" },
  { href: "/portal/attempts", label: "Attempts" },
  { href: "/portal/event-types", label: "Event types" },
  { href: "/portal/egress", label: "Egress IPs" },
];

/**
 * A portal URL from path segments and query values, each percent-encoded (so an id from a
 * request or the database cannot leave its place in the URL); empty values are left out.
 */
export function portalPath(
  segments: readonly (string | number)[],
  query: Record<string, string | number | null | undefined> = {},
): string {
  const path = ["/portal", ...segments.map((s) => encodeURIComponent(String(s)))].join("/");
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) {
    if (v !== undefined && v !== null && v !== "") params.set(k, String(v));
  }
  const qs = params.toString();
  return qs ? `${path}?${qs}` : path;
}

export interface PortalPageOptions extends Omit<PageOptions, "principal" | "nav" | "csrfToken"> {
  /** the session, or null on pages shown without one (link expired) */
  session: PortalSession | null;
  csrfToken?: string;
}

/** Sends a portal page: the shared shell, frameable by the configured ancestors. */
export function sendPortalPage(
  reply: FastifyReply,
  frameAncestors: readonly string[],
  o: PortalPageOptions,
  status = 200,
): FastifyReply {
  return pageHeaders(reply, { frameAncestors: frameAncestors.join(" ") })
    .code(status)
    .send(
      renderPage({
        ...o,
        principal: o.session?.principal ?? null,
        who: o.session?.appName,
        nav: PORTAL_NAV,
        signOutAction: "/portal/sign-out",
        brand: o.brand ?? "Webhooks",
      }),
    );
}
