/**
 * Operational webhooks (docs/operational-webhooks.md): Svix-shaped events delivered to
 * HOOKRELAY_OPERATIONAL_WEBHOOK_URL by hookrelay itself, as messages of the operator
 * application (uid `hookrelay-operator`, the alert webhook's) to its endpoint `operational`,
 * through the same queue, retries and signing as every other message. Its signing secret is
 * read like any endpoint's: GET /api/v1/app/hookrelay-operator/endpoint/operational/secret.
 *
 * The delivery events are raised by the result write (domain/operational-events.ts says
 * which, queue/operational-events.ts writes them); the endpoint events by the API, with
 * emitEndpointEvent, in the transaction of the change.
 */
import type { Pool, Queryable } from "../db/pool.ts";
import {
  OPERATIONAL_EVENT_TYPES,
  type OperationalEvent,
  type OperationalTarget,
} from "../domain/operational-events.ts";
import { enqueueMessage } from "../queue/enqueue-message.ts";
import type { SecretBox } from "../security/secret-box.ts";
import { ensureOperatorEndpointFor } from "./alert-webhook.ts";

export const OPERATIONAL_ENDPOINT_UID = "operational";

/**
 * Attempts an event's delivery gets when the operational endpoint is created: more than a
 * customer endpoint's default, so that an operator URL that is down for hours loses
 * nothing (with the default 30 s base and 1 h cap: 7 hours of retries on average, full jitter
 * makes it up to 14). PATCH the endpoint to change it.
 */
export const OPERATIONAL_MAX_ATTEMPTS = 20;

/** Creates (or re-points to `url`) the operational endpoint; the target the events go to. */
export async function ensureOperationalEndpoint(
  pool: Pool,
  url: string,
  secretBox: SecretBox,
  defaultMaxAttempts: number,
): Promise<OperationalTarget & { endpointId: string }> {
  const { appId, endpointId } = await ensureOperatorEndpointFor(
    pool,
    {
      uid: OPERATIONAL_ENDPOINT_UID,
      url,
      description: "operational events (Svix-shaped): failing deliveries, endpoint changes",
      eventTypes: OPERATIONAL_EVENT_TYPES,
      maxAttempts: OPERATIONAL_MAX_ATTEMPTS,
    },
    secretBox,
  );
  return { appId, endpointId, defaultMaxAttempts };
}

/** The endpoint an endpoint event is about. */
export interface EndpointSubject {
  id: string;
  app_id: string;
  uid: string | null;
}

/**
 * Queues one endpoint event (endpoint.created, .updated, .deleted, .enabled, .disabled)
 * inside `db`'s transaction. Nothing when operational webhooks are off, and nothing about
 * the operator application's own endpoints.
 */
export async function emitEndpointEvent(
  db: Queryable,
  target: OperationalTarget | null | undefined,
  type: OperationalEvent,
  endpoint: EndpointSubject,
  extra: Record<string, unknown> = {},
): Promise<void> {
  if (!target || endpoint.app_id === target.appId) return;
  const { rows } = await db.query<{ uid: string | null; target: boolean }>(
    `select (select uid from applications where id = $1::text) as uid,
            exists (select 1 from applications where id = $2::text) as target`,
    [endpoint.app_id, target.appId],
  );
  // an operator application deleted by hand takes no events (until the next start makes it)
  if (!rows[0]?.target) return;
  const data = {
    appId: endpoint.app_id,
    appUid: rows[0].uid,
    endpointId: endpoint.id,
    endpointUid: endpoint.uid,
    ...extra,
  };
  await enqueueMessage(
    db,
    { appId: target.appId, eventType: type, payload: JSON.stringify({ type, data }) },
    target.defaultMaxAttempts,
  );
}
