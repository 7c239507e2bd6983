/**
 * The "Blocked keys" section of an endpoint's page (docs/delivery.md, "Ordering";
 * docs/dashboard.md): the ordering keys held back by their head, each with Retry and Skip,
 * shown only while the endpoint has any. Its data and actions are the API's own routes:
 *   GET  /api/v1/app/{app}/endpoint/{ep}/ordering-keys/blocked
 *   POST /dashboard/endpoints/{ep}/ordering-keys/{delivery}/retry → POST .../blocked/{delivery}/retry
 *   POST /dashboard/endpoints/{ep}/ordering-keys/{delivery}/skip  → POST .../blocked/{delivery}/skip
 * then back to the endpoint page with what happened. The table is the portal's too
 * (portal/pages/endpoints.ts), with its own buttons.
 */
import type { FastifyInstance } from "fastify";
import type { Principal } from "../../api/auth.ts";
import type { ReadResponse } from "../../api/in-process.ts";
import { type DashboardDeps, sessionOf } from "../context.ts";
import { CSRF_FIELD } from "../csrf.ts";
import { badge, count, since, time } from "../format.ts";
import { dashboardPath, type Html, html } from "../html.ts";
import { clippedText } from "../payload-view.ts";
import { appOf, endpointApi, epPath, ok } from "./endpoint.ts";

export type BlockedKey =
  ReadResponse<"/api/v1/app/:appId/endpoint/:endpointId/ordering-keys/blocked">["data"][number];

/** How many blocked keys a page shows (the oldest heads first). */
export const BLOCKED_KEYS_SHOWN = 50;

/** The endpoint's blocked keys as its API lists them (the first page). */
export async function readBlockedKeys(
  deps: Pick<DashboardDeps, "calls">,
  principal: Principal,
  appId: string,
  endpointId: string,
) {
  return deps.calls.read(
    principal,
    "/api/v1/app/:appId/endpoint/:endpointId/ordering-keys/blocked",
    { appId, endpointId },
    { limit: BLOCKED_KEYS_SHOWN },
  );
}

/** Why a head holds its key, in words. */
export function blockedWhy(k: BlockedKey): Html {
  const last = k.lastStatusCode ? String(k.lastStatusCode) : (k.lastErrorKind ?? "error");
  return k.reason === "dead_letter"
    ? html`${badge("dead_letter", "dead letter")} after ${count(k.attemptCount)} ${k.attemptCount === 1 ? "attempt" : "attempts"}, last ${last}${k.lastError ? html`: <span class="muted">${clippedText(k.lastError)}</span>` : ""}`
    : html`${badge("failed", "retrying")} after ${last}, next attempt ${time(k.nextAttemptAt)}`;
}

/**
 * The blocked-keys table; `actions` gives a row's buttons (none when the viewer may not
 * act), `messageHref` the link of its head's message.
 */
export function blockedKeysTable(
  keys: BlockedKey[],
  messageHref: (msgId: string) => string,
  actions: ((k: BlockedKey) => Html) | null,
): Html {
  return html`<div class="table-wrap"><table data-testid="blocked-keys">
<thead><tr><th>Key</th><th>Head message</th><th>Why</th><th>Since</th><th class="num">Waiting</th>${actions ? html`<th>Actions</th>` : ""}</tr></thead>
<tbody>${keys.map(
    (k) => html`<tr data-delivery="${k.deliveryId}">
  <td class="key${!k.wholeEndpoint && k.key.length > 32 ? " long" : ""}">${k.wholeEndpoint ? html`<span class="muted">(whole endpoint)</span>` : html`<code>${k.key}</code>`}</td>
  <td><a href="${messageHref(k.msgId)}"><code>${k.msgId}</code></a> <span class="muted">${k.deliveryId}</span></td>
  <td class="text">${blockedWhy(k)}</td>
  <td>${time(k.since)} <span class="muted">(${since(k.since)} ago)</span></td>
  <td class="num">${count(k.waiting)}</td>
  ${actions ? html`<td><div class="actions">${actions(k)}</div></td>` : ""}
</tr>`,
  )}</tbody></table></div>`;
}

/** A CSRF-protected POST button. */
export function postButton(action: string, label: string, csrf: string, confirm?: string): Html {
  return html`<form method="post" action="${action}"${confirm ? html` data-confirm="${confirm}"` : ""}><input type="hidden" name="${CSRF_FIELD}" value="${csrf}"><button type="submit">${label}</button></form>`;
}

/** What Skip does, for its confirmation. */
export const SKIP_CONFIRM =
  "Skip this message for its key? Its delivery is canceled and the next message of the key is sent.";

/** The endpoint page's section: empty when the endpoint has no blocked key. */
export async function blockedKeysSection(
  deps: DashboardDeps,
  s: { principal: Principal; csrfToken: string; appId: string; endpointId: string },
): Promise<Html | ""> {
  const page = await readBlockedKeys(deps, s.principal, s.appId, s.endpointId);
  if (page.data.length === 0) return "";
  const path = (k: BlockedKey, verb: string) =>
    epPath(s.endpointId, "ordering-keys", k.deliveryId, verb);
  return html`<section aria-labelledby="h-blocked"><h2 id="h-blocked">Blocked keys</h2>
<p>Ordering keys held back by their first undelivered message: the messages behind it wait until it is retried and delivered, or skipped${page.done ? "" : html` (the ${count(BLOCKED_KEYS_SHOWN)} oldest shown)`}.</p>
${blockedKeysTable(
  page.data,
  (msgId) => dashboardPath(["messages", msgId]),
  (k) =>
    html`${postButton(path(k, "retry"), "Retry", s.csrfToken)}${postButton(path(k, "skip"), "Skip", s.csrfToken, SKIP_CONFIRM)}`,
)}</section>`;
}

/** The dashboard's Retry and Skip, each the API's route, then back to the endpoint page. */
export function registerEndpointOrderingActions(app: FastifyInstance, deps: DashboardDeps): void {
  for (const verb of ["retry", "skip"] as const) {
    app.post<{ Params: { endpointId: string; deliveryId: string } }>(
      `/endpoints/:endpointId/ordering-keys/:deliveryId/${verb}`,
      { schema: { hide: true } },
      async (request, reply) => {
        const { principal } = sessionOf(request);
        const { endpointId, deliveryId } = request.params;
        const appId = await appOf(deps, principal, endpointId);
        ok(
          await deps.calls.call(
            principal,
            "POST",
            endpointApi(
              appId,
              endpointId,
              `/ordering-keys/blocked/${encodeURIComponent(deliveryId)}/${verb}`,
            ),
          ),
        );
        return reply.redirect(`${epPath(endpointId)}?done=key-${verb}`, 303);
      },
    );
  }
}
