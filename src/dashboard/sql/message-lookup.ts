/**
 * Message lookup for the dashboard (docs/dashboard.md, "Pages"): the messages a typed id
 * names, as a message id or a producer's eventId, in any app the principal may see. An
 * eventId is unique per app only, so an admin may get one per app. The message itself is
 * then read through the API (GET /app/{app}/msg/{id}).
 */
import type { Queryable } from "../../db/pool.ts";
import { messageMsOf } from "../../db/sql/message-ms.ts";

export interface MessageHit {
  id: string;
  app_id: string;
  app_name: string;
  event_type: string;
  event_id: string | null;
  created_at: Date;
}

export async function lookUpMessages(
  db: Queryable,
  idOrEventId: string,
  appId: string | null,
  limit = 20,
): Promise<MessageHit[]> {
  // Two lookups, each reading only the partitions that can hold its rows (docs/history.md,
  // "Messages and deliveries"): as a message id, the id's own period (messageMsOf); as an
  // eventId, the periods of the message ids message_event_ids names for it in any app
  // (message_event_ids_event_idx), and the legacy partition, whose rows an older
  // hookrelay may have written without a row there (migration 0033).
  const { rows } = await db.query<MessageHit>(
    `with hits as (
       select m.id, m.app_id, m.event_type, m.event_id, m.created_at
       from messages m
       where m.id = $1::text and ${messageMsOf("m", "$1::text")}
         and ($2::text is null or m.app_id = $2::text)
       union
       select m.id, m.app_id, m.event_type, m.event_id, m.created_at
       from message_event_ids k
       -- a probe per hit in its own period (the limit keeps it a parameterized probe,
       -- which a plan for small tables would otherwise turn into a scan of every period)
       cross join lateral (
         select m.id, m.app_id, m.event_type, m.event_id, m.created_at from messages m
         where m.id = k.message_id and ${messageMsOf("m", "k.message_id")}
         limit 1) m
       where k.event_id = $1::text and ($2::text is null or k.app_id = $2::text)
       union
       select m.id, m.app_id, m.event_type, m.event_id, m.created_at
       from messages m
       where m.event_id = $1::text and m.message_ms = 0
         and ($2::text is null or m.app_id = $2::text)
     )
     select h.id, h.app_id, a.name as app_name, h.event_type, h.event_id, h.created_at
     from hits h join applications a on a.id = h.app_id
     order by h.id = $1::text desc, h.created_at desc
     limit $3::int`,
    [idOrEventId, appId, limit],
  );
  return rows;
}

/** The app of an endpoint the principal may see, or null (404 for the caller). */
export async function endpointAppId(
  db: Queryable,
  endpointId: string,
  appId: string | null,
): Promise<string | null> {
  const { rows } = await db.query<{ app_id: string }>(
    "select app_id from endpoints where id = $1::text and ($2::text is null or app_id = $2::text)",
    [endpointId, appId],
  );
  return rows[0]?.app_id ?? null;
}

/** An app's name and uid, to show it as people know it ("Acme (acme)"). */
export async function appNameOf(
  db: Queryable,
  appId: string,
): Promise<{ name: string; uid: string | null } | null> {
  const { rows } = await db.query<{ name: string; uid: string | null }>(
    "select name, uid from applications where id = $1::text",
    [appId],
  );
  return rows[0] ?? null;
}
