/**
 * The body of a portal endpoint's page (GET /portal/endpoints/{ep}, endpoints.ts): its
 * settings (its custom headers as the API shows them: sensitive values masked), actions, health section, signing secret, test event, replay and recent
 * attempts; and the POST button every portal page uses for an action.
 */
import type { AttemptPageResponse, EndpointResponse } from "../../api/response-schemas.ts";
import { type CatalogEntry, deliveryFacts } from "../../dashboard/endpoint-form.ts";
import { type Html, html } from "../../dashboard/html.ts";
import { clippedText } from "../../dashboard/payload-view.ts";
import { can } from "../context.ts";
import { portalPath } from "../layout.ts";
import type { PortalSession } from "../session.ts";
import { badge, eventTypesText, ms, when } from "../views.ts";

/** A POST button with the session's CSRF token; `confirm` asks first (dashboard.js). */
export const actionButton = (
  session: PortalSession,
  action: string,
  label: string,
  o: { danger?: boolean; confirm?: string } = {},
) =>
  html`<form method="post" action="${action}"${o.confirm ? html` data-confirm="${o.confirm}"` : ""}><input type="hidden" name="_csrf" value="${session.csrfToken}"><button type="submit"${o.danger ? html` class="danger"` : ""}>${label}</button></form>`;

const hasHmac = (e: EndpointResponse) =>
  String(e.signatureScheme ?? "v1")
    .split("+")
    .includes("v1");
const hasEd25519 = (e: EndpointResponse) =>
  String(e.signatureScheme ?? "")
    .split("+")
    .includes("v1a");

export function endpointDetail(
  session: PortalSession,
  e: EndpointResponse,
  health: Html,
  attempts: AttemptPageResponse["data"],
  types: CatalogEntry[],
  redactUrl: (url: string) => string,
  flash: Html | null,
  replay: Html,
  /** the custom headers, sensitive values masked by the API (dashboard/endpoint-headers-facts.ts) */
  headers: Html,
): Html {
  const path = (...rest: string[]) => portalPath(["endpoints", e.id, ...rest]);
  return html`<h1>Endpoint</h1>
${flash}
<dl class="facts">
<dt>URL</dt><dd><code>${redactUrl(e.url)}</code></dd>
<dt>Description</dt><dd>${e.description || "–"}</dd>
<dt>Event types</dt><dd>${eventTypesText(e.eventTypes)}</dd>
${deliveryFacts(e)}
${headers}
<dt>State</dt><dd>${e.disabled ? badge("disabled") : badge("ok", "enabled")}${e.disabledReason ? html` <span class="muted">${e.disabledReason}</span>` : ""}</dd>
<dt>Created</dt><dd>${when(typeof e.createdAt === "string" ? e.createdAt : null)}</dd>
<dt>Id</dt><dd><code>${e.id}</code></dd>
</dl>
${
  can(session, "manageEndpoints") &&
  html`<div class="actions">
<a class="button" href="${path("edit")}">Edit</a>
${e.disabled ? actionButton(session, path("enable"), "Enable") : actionButton(session, path("disable"), "Disable")}
${actionButton(session, path("delete"), "Delete", { danger: true, confirm: "Delete this endpoint? Its deliveries stop." })}
</div>`
}
${health}
<h2>Signing secret</h2>
<p>Verify every request with ${
    hasHmac(e) && hasEd25519(e)
      ? html`this secret (HMAC, <code>v1,</code> signatures) or the Ed25519 public key (<code>v1a,</code>)`
      : hasEd25519(e)
        ? html`the Ed25519 public key (<code>v1a,</code> signatures; the key is public, the private half stays with the sender)`
        : "this secret"
  } (Standard Webhooks signatures: <code>webhook-id</code>, <code>webhook-timestamp</code>, <code>webhook-signature</code>).</p>
<div class="actions">
<code>${hasHmac(e) ? "whsec_••••••••" : "whpk_••••••••"}</code>
${can(session, "viewSecret") && actionButton(session, path("secret"), "Reveal")}
${can(session, "rotateSecret") && actionButton(session, path("secret", "rotate"), "Rotate", { confirm: "Rotate the signing secret? The old one keeps signing for 24 hours." })}
</div>
${
  can(session, "createAttempts") &&
  html`<h2>Send a test event</h2>
<form method="post" action="${path("test")}" class="actions">
<input type="hidden" name="_csrf" value="${session.csrfToken}">
<label>Event type <select name="eventType">
<option value="hookrelay.ping">hookrelay.ping</option>
${types.map((t) => html`<option value="${t.name}">${t.name}</option>`)}
</select></label>
<button type="submit">Send</button>
</form>`
}
${replay}
<h2>Recent attempts</h2>
${
  attempts.length === 0
    ? html`<p class="muted">No attempts yet.</p>`
    : html`<div class="table-wrap"><table>
<thead><tr><th>Time</th><th>Message</th><th>Status</th><th class="num">Latency</th><th class="hide-narrow">Error</th></tr></thead>
<tbody>${attempts.map(
        (a) => html`<tr>
<td>${when(a.timestamp)}</td>
<td><a href="${portalPath(["messages", a.msgId])}"><code>${a.msgId}</code></a></td>
<td>${a.status === 0 ? badge("delivered", String(a.responseStatusCode)) : badge("failed", a.responseStatusCode ? String(a.responseStatusCode) : (a.errorKind ?? "failed"))}</td>
<td class="num">${ms(a.responseDurationMs)}</td>
<td class="text hide-narrow">${clippedText(a.error ?? "")}</td>
</tr>`,
      )}</tbody></table></div>`
}`;
}
