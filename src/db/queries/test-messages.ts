/**
 * A test message for one endpoint (the portal's "send a test event", Svix's send-example):
 * the message and a single delivery to that endpoint, whatever its event-type filter, in
 * one statement, waking the workers at commit. The ordinary fan-out (queue/enqueue-message.ts)
 * is not used: a test must reach the endpoint it is meant for and no other.
 */
import { effectiveSql } from "../../domain/endpoint-policy-derived.ts";
import type { Queryable } from "../pool.ts";
import { WORK_CHANNEL } from "../work-channel.ts";

/** Writes the message and its one delivery; its creation time, or null if no such endpoint. */
export async function insertTestMessage(
  db: Queryable,
  m: {
    id: string;
    appId: string;
    endpointId: string;
    eventType: string;
    /** the payload's JSON text */
    payload: string;
    defaultMaxAttempts: number;
  },
): Promise<Date | null> {
  const { rows } = await db.query<{ created_at: Date | null }>(
    `with msg as (
       insert into messages (id, app_id, event_type, payload, tags, message_ms)
       select $1::text, e.app_id, $4::text, $5::text, array['test'], hookrelay_message_ms($1::text)
       from endpoints e where e.id = $3::text and e.app_id = $2::text
       returning id, app_id, created_at, message_ms
     ),
     delivery as (
       insert into deliveries (message_id, endpoint_id, app_id, max_attempts, next_attempt_at,
                               message_ms)
       select m.id, e.id, m.app_id, ${effectiveSql("e", "maxAttempts", "$6")}, now(), m.message_ms
       from msg m join endpoints e on e.id = $3::text
       returning message_id
     )
     select (select created_at from msg) as created_at,
            (select count(*) from (select pg_notify('${WORK_CHANNEL}', '') from delivery limit 1) w)
              as woken`,
    [m.id, m.appId, m.endpointId, m.eventType, m.payload, m.defaultMaxAttempts],
  );
  return rows[0]?.created_at ?? null;
}
