/**
 * Message lookup for the dashboard (docs/dashboard.md, "Pages"): the messages a typed id
 * names, as a message id or a producer's eventId, in any app the principal may see. An
 * eventId is unique per app only, so an admin may get one per app. The message itself is
 * then read through the API (GET /app/{app}/msg/{id}).
 */
import type { Queryable } from "../../db/pool.ts";

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
  // two index lookups: the primary key, and messages_event_id_idx (0012_dashboard.sql)
  const { rows } = await db.query<MessageHit>(
    `select m.id, m.app_id, a.name as app_name, m.event_type, m.event_id, m.created_at
     from messages m join applications a on a.id = m.app_id
     where (m.id = $1::text or m.event_id = $1::text)
       and ($2::text is null or m.app_id = $2::text)
     order by m.id = $1::text desc, m.created_at desc
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
