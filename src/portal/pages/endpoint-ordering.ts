/**
 * The portal's "Blocked keys" on an endpoint's page (docs/portal.md; docs/delivery.md,
 * "Ordering"): the same table as the dashboard's (dashboard/pages/endpoint-ordering.ts),
 * read through the API as the session's app, shown only while the endpoint has any. Retry
 * and Skip need the CreateAttempts capability (as a resend does), each a CSRF-protected
 * POST carried out by the API's route, then back to the endpoint page:
 *   POST /portal/endpoints/{ep}/ordering-keys/{delivery}/retry | skip
 */
import type { FastifyInstance } from "fastify";
import { type Html, html } from "../../dashboard/html.ts";
import {
  BLOCKED_KEYS_SHOWN,
  blockedKeysTable,
  postButton,
  SKIP_CONFIRM,
} from "../../dashboard/pages/endpoint-ordering.ts";
import { can, type PortalDeps, requireCan, sessionOf } from "../context.ts";
import { portalPath } from "../layout.ts";
import type { PortalSession } from "../session.ts";
import { appApi } from "./endpoints.ts";

/** The endpoint page's section: empty when the endpoint has no blocked key. */
export async function portalBlockedKeysSection(
  deps: PortalDeps,
  session: PortalSession,
  endpointId: string,
): Promise<Html | ""> {
  const page = await deps.read(
    session,
    "/api/v1/app/:appId/endpoint/:endpointId/ordering-keys/blocked",
    { appId: session.appId, endpointId },
    { limit: BLOCKED_KEYS_SHOWN },
  );
  if (page.data.length === 0) return "";
  const path = (deliveryId: string, verb: string) =>
    portalPath(["endpoints", endpointId, "ordering-keys", deliveryId, verb]);
  const acts = can(session, "createAttempts");
  return html`<h2 id="blocked-keys">Blocked keys</h2>
<p>Messages with an ordering key go out one at a time. These keys are held back by their first undelivered message: the ones behind it wait until it is retried and delivered, or skipped${page.done ? "" : html` (the ${BLOCKED_KEYS_SHOWN} oldest shown)`}.</p>
${blockedKeysTable(
  page.data,
  (msgId) => portalPath(["messages", msgId]),
  acts
    ? (k) =>
        html`${postButton(path(k.deliveryId, "retry"), "Retry", session.csrfToken)}${postButton(path(k.deliveryId, "skip"), "Skip", session.csrfToken, SKIP_CONFIRM)}`
    : null,
)}${acts ? "" : html`<p class="muted">This link does not allow sending messages again.</p>`}`;
}

export function registerPortalOrderingActions(app: FastifyInstance, deps: PortalDeps): void {
  for (const verb of ["retry", "skip"] as const) {
    app.post<{ Params: { endpointId: string; deliveryId: string } }>(
      `/endpoints/:endpointId/ordering-keys/:deliveryId/${verb}`,
      { schema: { hide: true } },
      async (request, reply) => {
        const session = sessionOf(request);
        requireCan(session, "createAttempts");
        const { endpointId, deliveryId } = request.params;
        await deps.api(
          session,
          "POST",
          appApi(session, "endpoint", endpointId, "ordering-keys", "blocked", deliveryId, verb),
        );
        return reply.redirect(portalPath(["endpoints", endpointId], { done: `key-${verb}` }), 303);
      },
    );
  }
}
