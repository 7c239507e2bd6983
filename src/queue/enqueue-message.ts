/**
 * Accepting a message: the message row and one delivery per matching endpoint are written
 * in one statement, so they commit together (SPEC §2.1). An endpoint matches when it is
 * enabled, its event-type filter is empty or names the event type, and it listens to all
 * channels or shares one with the message. A repeated producer `eventId` inserts nothing
 * and returns the original message.
 *
 * Waking the workers: the statement NOTIFYs itself, so the wake-up arrives exactly when the
 * caller's transaction commits (the library's transactional outbox). The API writes many
 * messages per transaction instead (enqueue-batcher.ts), with one notification per batch.
 */
import type { Queryable } from "../db/pool.ts";
import { ID_PREFIX, newId } from "../ids.ts";
import { WORK_CHANNEL } from "./work-channel.ts";

export interface NewMessage {
  appId: string;
  eventType: string;
  /** the payload's JSON text, stored and sent as is */
  payload: string;
  eventId?: string | null;
  channels?: string[] | null;
  tags?: string[] | null;
  /** scheduled send; null = now */
  deliverAt?: Date | null;
  /**
   * Keep the message (and its payload) at most this long once it is finished; it never
   * outlives the configured retention. Null: the configured retention only.
   */
  retentionMs?: number | null;
}

export interface EnqueueResult {
  messageId: string;
  createdAt: Date;
  /** false when eventId matched an existing message */
  created: boolean;
  deliveries: number;
}

const ENQUEUE_SQL = `
with msg as (
  insert into messages (id, app_id, event_type, event_id, payload, channels, tags, expires_at)
  values ($1::text, $2::text, $3::text, $4::text, $5::text, $6::text[], $7::text[],
          now() + $10::bigint * interval '1 millisecond')
  on conflict (app_id, event_id) do nothing
  returning id, app_id, event_type, channels, created_at
),
fanout as (
  insert into deliveries (message_id, endpoint_id, app_id, max_attempts, next_attempt_at)
  select m.id, e.id, m.app_id, coalesce(e.max_attempts, $8::integer),
         coalesce($9::timestamptz, now())
  from msg m
  join endpoints e on e.app_id = m.app_id
  where not e.disabled
    and (e.event_types is null or m.event_type = any (e.event_types))
    and (e.channels is null or e.channels && coalesce(m.channels, '{}'::text[]))
  returning 1
),
counted as (
  select (select id from msg) as id, (select created_at from msg) as created_at,
         (select count(*) from fanout)::int as deliveries
)
select c.id, c.created_at, c.deliveries,
       -- wake idle workers when this statement's transaction commits
       case when c.deliveries > 0 and $9::timestamptz is null
            then pg_notify('${WORK_CHANNEL}', '') end as notified
from counted c
`;

export async function enqueueMessage(
  db: Queryable,
  message: NewMessage,
  defaultMaxAttempts: number,
): Promise<EnqueueResult> {
  const { rows } = await db.query({
    name: "hookrelay_enqueue_message",
    text: ENQUEUE_SQL,
    values: [
      newId(ID_PREFIX.message),
      message.appId,
      message.eventType,
      message.eventId ?? null,
      message.payload,
      message.channels ?? null,
      message.tags ?? null,
      defaultMaxAttempts,
      message.deliverAt ?? null,
      message.retentionMs ?? null,
    ],
  });
  const row = rows[0];
  if (row.id)
    return {
      messageId: row.id,
      createdAt: row.created_at,
      created: true,
      deliveries: row.deliveries,
    };
  const existing = await db.query(
    "select id, created_at from messages where app_id = $1::text and event_id = $2::text",
    [message.appId, message.eventId],
  );
  return {
    messageId: existing.rows[0].id,
    createdAt: existing.rows[0].created_at,
    created: false,
    deliveries: 0,
  };
}
