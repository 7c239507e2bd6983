/**
 * Posting alerts to an operator URL, delivered by hookrelay itself through its own queue
 * (signed, retried, visible in the API like any delivery). The URL is an endpoint of a
 * reserved application (uid `hookrelay-operator`); its signing secret is read like any
 * other endpoint's: GET /api/v1/app/hookrelay-operator/endpoint/alerts/secret.
 */
import { type Pool, withTransaction } from "../db/pool.ts";
import { generateSecret } from "../delivery/sign.ts";
import { ID_PREFIX, newId } from "../ids.ts";
import { enqueueMessage } from "../queue/enqueue-message.ts";
import type { SecretBox } from "../security/secret-box.ts";
import type { Alert } from "./alerts.ts";

export const OPERATOR_APP_UID = "hookrelay-operator";
export const OPERATOR_ENDPOINT_UID = "alerts";

/** One endpoint of the operator app: its uid, URL, what it is for and what it receives. */
export interface OperatorEndpointSpec {
  uid: string;
  url: string;
  description: string;
  eventTypes: readonly string[];
  /** set when the endpoint is created (null: the server default); later, the API changes it */
  maxAttempts?: number | null;
}

/**
 * Creates (or re-points) the operator app and one endpoint of it, with a new HMAC secret
 * when the endpoint is new; returns their ids.
 */
export async function ensureOperatorEndpointFor(
  pool: Pool,
  spec: OperatorEndpointSpec,
  secretBox: SecretBox,
): Promise<{ appId: string; endpointId: string }> {
  return withTransaction(pool, async (client) => {
    await client.query("select pg_advisory_xact_lock(hashtext('hookrelay-operator'))");
    const app = await client.query(
      `insert into applications (id, uid, name) values ($1::text, $2::text, 'hookrelay operator alerts')
       on conflict (uid) do update set uid = excluded.uid
       returning id`,
      [newId(ID_PREFIX.app), OPERATOR_APP_UID],
    );
    const appId: string = app.rows[0].id;
    const ep = await client.query(
      `insert into endpoints (id, app_id, uid, url, description, event_types, max_attempts)
       values ($1::text, $2::text, $3::text, $4::text, $5::text, $6::text[], $7::integer)
       on conflict (app_id, uid) do update set url = excluded.url, updated_at = now()
       returning id, (xmax = 0) as created`,
      [
        newId(ID_PREFIX.endpoint),
        appId,
        spec.uid,
        spec.url,
        spec.description,
        spec.eventTypes,
        spec.maxAttempts ?? null,
      ],
    );
    if (ep.rows[0].created) {
      await client.query(
        "insert into endpoint_secrets (endpoint_id, secret) values ($1::text, $2::text)",
        [ep.rows[0].id, secretBox.seal(generateSecret())],
      );
    }
    return { appId, endpointId: ep.rows[0].id };
  });
}

/** Creates (or re-points) the operator app and its alerts endpoint; returns the app id. */
export async function ensureOperatorEndpoint(
  pool: Pool,
  url: string,
  secretBox: SecretBox,
): Promise<string> {
  const { appId } = await ensureOperatorEndpointFor(
    pool,
    {
      uid: OPERATOR_ENDPOINT_UID,
      url,
      description: "alerts raised and resolved",
      eventTypes: ["alert.raised", "alert.resolved"],
    },
    secretBox,
  );
  return appId;
}

/** Queues one message per raised or resolved alert. */
export async function postAlerts(
  pool: Pool,
  url: string,
  changes: { raised: Alert[]; resolved: Alert[] },
  maxAttempts: number,
  secretBox: SecretBox,
): Promise<number> {
  const events = [
    ...changes.raised.map((alert) => ({ type: "alert.raised", alert })),
    ...changes.resolved.map((alert) => ({ type: "alert.resolved", alert })),
  ];
  if (events.length === 0) return 0;
  const appId = await ensureOperatorEndpoint(pool, url, secretBox);
  for (const e of events) {
    await enqueueMessage(
      pool,
      {
        appId,
        eventType: e.type,
        payload: JSON.stringify({ event: e.type, at: new Date().toISOString(), ...e.alert }),
      },
      maxAttempts,
    );
  }
  return events.length;
}
