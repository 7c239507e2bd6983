/**
 * The page shell every dashboard page shares (docs/dashboard.md): head with the versioned
 * assets, the navigation, the sign-out form, and the headers that go with a page. No inline
 * script or style anywhere, so the Content-Security-Policy below can forbid both.
 */
import type { FastifyReply } from "fastify";
import type { Principal } from "../api/auth.ts";
import { assetUrl } from "./assets.ts";
import { type Html, html, toHtmlString } from "./html.ts";

/**
 * Scripts and styles only from this origin's files, no inline code or eval, no plugins,
 * forms post only here, and no page may frame the dashboard. `frameAncestors` lets a page
 * that is meant to be embedded (the tenant portal) name who may frame it.
 */
export function contentSecurityPolicy(options: { frameAncestors?: string } = {}): string {
  return [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    "connect-src 'self'",
    "font-src 'self'",
    "form-action 'self'",
    "base-uri 'none'",
    `frame-ancestors ${options.frameAncestors ?? "'none'"}`,
  ].join("; ");
}

/** The headers of every dashboard page (HTML, never cached: it shows live, private data). */
export function pageHeaders(
  reply: FastifyReply,
  options: { frameAncestors?: string } = {},
): FastifyReply {
  reply
    .header("content-security-policy", contentSecurityPolicy(options))
    .header("x-content-type-options", "nosniff")
    .header("referrer-policy", "same-origin")
    .header("cache-control", "no-store")
    .type("text/html; charset=utf-8");
  if (!options.frameAncestors) reply.header("x-frame-options", "DENY");
  return reply;
}

export interface NavItem {
  href: string;
  label: string;
}

/** The operator dashboard's sections, in menu order. */
export const DASHBOARD_NAV: readonly NavItem[] = [
  { href: "/dashboard", label: "Overview" },
  { href: "/dashboard/endpoints", label: "Endpoints" },
  { href: "/dashboard/dead-letters", label: "Dead letters" },
  { href: "/dashboard/message-list", label: "Messages" },
  { href: "/dashboard/attempt-list", label: "Attempts" },
  { href: "/dashboard/messages", label: "Message lookup" },
];

export interface PageOptions {
  title: string;
  /** the page's main content */
  body: Html;
  /** who is signed in (shown in the header); null on the sign-in page */
  principal: Principal | null;
  /** the CSRF token for the sign-out form and every form on the page */
  csrfToken?: string;
  /** href of the current section, to mark it in the menu */
  active?: string;
  nav?: readonly NavItem[];
  /** where the sign-out form posts (default /dashboard/sign-out) */
  signOutAction?: string;
  /** product name in the header (default "hookrelay") */
  brand?: string;
  /** page includes uPlot charts */
  charts?: boolean;
  /** who is signed in, in words (default: "admin" or "app <id>") */
  who?: string;
}

const who = (p: Principal) => (p.role === "admin" ? "admin" : `app ${p.appId}`);

/** A whole HTML document around `body`. */
export function renderPage(o: PageOptions): string {
  const nav = o.nav ?? DASHBOARD_NAV;
  const doc = html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="data:,">
<meta name="htmx-config" content="${JSON.stringify({ includeIndicatorStyles: false, allowEval: false, allowScriptTags: false })}">
${o.csrfToken && html`<meta name="csrf-token" content="${o.csrfToken}">`}
<title>${o.title} · ${o.brand ?? "hookrelay"}</title>
<link rel="stylesheet" href="${assetUrl("dashboard.css")}">
${o.charts && html`<link rel="stylesheet" href="${assetUrl("uplot.css")}">`}
<script src="${assetUrl("htmx.js")}" defer></script>
${o.charts && html`<script src="${assetUrl("uplot.js")}" defer></script><script src="${assetUrl("charts.js")}" defer></script>`}
<script src="${assetUrl("dashboard.js")}" defer></script>
</head>
<body>
<a class="skip" href="#main">Skip to content</a>
<header class="top">
  <span class="brand">${o.brand ?? "hookrelay"}</span>
  ${
    o.principal &&
    html`<nav aria-label="Sections"><ul>${nav.map(
      (n) =>
        html`<li><a href="${n.href}"${n.href === o.active ? html` aria-current="page"` : ""}>${n.label}</a></li>`,
    )}</ul></nav>
  <form class="sign-out" method="post" action="${o.signOutAction ?? "/dashboard/sign-out"}">
    <input type="hidden" name="_csrf" value="${o.csrfToken ?? ""}">
    <span class="who">${o.who ?? who(o.principal)}</span>
    <button type="submit">Sign out</button>
  </form>`
  }
</header>
<main id="main" tabindex="-1">
${o.body}
</main>
</body>
</html>
`;
  return toHtmlString(doc);
}

/** Sends a page with its headers. */
export function sendPage(reply: FastifyReply, options: PageOptions, status = 200): FastifyReply {
  return pageHeaders(reply).code(status).send(renderPage(options));
}
