/**
 * Deliveries (one per message and endpoint) as the API reads them: a message's delivery
 * to each endpoint, the messages sent to an endpoint, and resend. The queue's own
 * statements (claim, results, release) live in src/queue.
 */
import { effectiveSql } from "../../domain/endpoint-policy-derived.ts";
import type { Queryable } from "../pool.ts";
import { lowerFloorSql } from "../sql/delivery-floor.ts";
import { byDeliveryId, deliveryIdRangeSql } from "../sql/delivery-id-blocks.ts";
import { requeueSet } from "../sql/delivery-states.ts";
import { messageMsOf } from "../sql/message-ms.ts";
import { orderingKeySql } from "../sql/ordering-key.ts";
import { WORK_CHANNEL } from "../work-channel.ts";
import type { MessageRow } from "./messages.ts";
import type { PageWindow } from "./page-window.ts";

/** The delivery columns shown beside a message or an endpoint. */
interface DeliveryState {
  status: string;
  next_attempt_at: Date;
}

export interface EndpointDeliveryRow extends DeliveryState {
  /** the endpoint's id */
  id: string;
  uid: string | null;
  url: string;
  description: string;
  disabled: boolean;
  event_types: string[] | null;
  channels: string[] | null;
  created_at: Date;
  updated_at: Date;
  attempt_count: number;
  last_status_code: number | null;
  last_error_kind: string | null;
  last_error: string | null;
  delivered_at: Date | null;
}

/** A page of the message's deliveries, one per endpoint, in endpoint id order. */
export async function listMessageDeliveries(
  db: Queryable,
  messageId: string,
  page: PageWindow,
): Promise<EndpointDeliveryRow[]> {
  const { rows } = await db.query<EndpointDeliveryRow>(
    `select e.id, e.uid, e.url, e.description, e.disabled, e.event_types, e.channels,
            e.created_at, e.updated_at, d.status, d.attempt_count, d.next_attempt_at,
            d.last_status_code, d.last_error_kind, d.last_error, d.delivered_at
     from deliveries d join endpoints e on e.id = d.endpoint_id
     where d.message_id = $1::text and ${messageMsOf("d", "$1::text")}
       and ($2::text is null or e.id ${page.op} $2::text)
     order by e.id ${page.direction} limit $3::integer`,
    [messageId, page.cursor, page.limit],
  );
  return rows;
}

export type MessageDeliveryRow = MessageRow & DeliveryState;

/** Narrows the messages sent to an endpoint; null means "any". */
export interface EndpointMessageFilter {
  /** delivery statuses */
  statuses: string[] | null;
  eventTypes: string[] | null;
  channel: string | null;
  tag: string | null;
  before: Date | null;
  after: Date | null;
}

/** A page of the messages delivered (or to be delivered) to the endpoint, in message id order. */
export async function listEndpointMessages(
  db: Queryable,
  endpointId: string,
  filter: EndpointMessageFilter,
  page: PageWindow,
): Promise<MessageDeliveryRow[]> {
  const { rows } = await db.query<MessageDeliveryRow>(
    `select m.id, m.event_type, m.event_id, m.payload, m.channels, m.tags, m.created_at,
            d.status, d.next_attempt_at
     from deliveries d join messages m on m.id = d.message_id and m.message_ms = d.message_ms
     where d.endpoint_id = $1::text and ($2::text is null or d.message_id ${page.op} $2::text)
       and ($4::text[] is null or d.status = any ($4::text[]))
       and ($5::text[] is null or m.event_type = any ($5::text[]))
       and ($6::text is null or $6::text = any (m.channels))
       and ($7::text is null or $7::text = any (m.tags))
       and ($8::timestamptz is null or m.created_at < $8::timestamptz)
       and ($9::timestamptz is null or m.created_at > $9::timestamptz)
     order by d.message_id ${page.direction} limit $3::integer`,
    [
      endpointId,
      page.cursor,
      page.limit,
      filter.statuses,
      filter.eventTypes,
      filter.channel,
      filter.tag,
      filter.before,
      filter.after,
    ],
  );
  return rows;
}

/**
 * Delivers the message to the endpoint again, with a fresh attempt budget and the same
 * message id, and wakes the workers. False when its delivery is in flight right now:
 * resending it would race its own result.
 */
export async function resendDelivery(
  db: Queryable,
  messageId: string,
  endpointId: string,
  defaultMaxAttempts: number,
): Promise<boolean> {
  const { rowCount } = await db.query(
    // The row again if it exists and is not in flight, else a new one: an update, then an
    // insert (an "on conflict do update" needs a unique index on the partitioned table,
    // which it has only per partition: docs/history.md).
    // The message is locked as a foreign key would (retention deletes a message's
    // deliveries itself: src/ops/retention.ts); a message deleted meanwhile gets no row.
    `with m as (
       select m.ordering_key, m.message_ms from messages m
       where m.id = $1::text and ${messageMsOf("m", "$1::text")}
       for key share
     ),
     again as (
       update deliveries d
       set ${requeueSet({ maxAttempts: effectiveSql("e", "maxAttempts", "$3"), dueAt: "now()" })}
       from endpoints e
       where e.id = $2::text and d.message_id = $1::text and d.endpoint_id = $2::text
         and ${messageMsOf("d", "$1::text")} and d.status <> 'in_flight'
       returning 1
     ),
     added as (
       insert into deliveries (message_id, endpoint_id, app_id, max_attempts, trigger, ordering_key,
                               message_ms)
       select $1::text, e.id, e.app_id, ${effectiveSql("e", "maxAttempts", "$3")}, 'manual',
              ${orderingKeySql("e", "(select ordering_key from m)")},
              (select message_ms from m)
       from endpoints e where e.id = $2::text and exists (select 1 from m)
         and not exists (select 1 from deliveries d
                         where d.message_id = $1::text and d.endpoint_id = $2::text
                           and ${messageMsOf("d", "$1::text")})
       on conflict do nothing
       returning 1
     ),
     -- the claim reads the queue from the floor up (db/sql/delivery-floor.ts)
     floor as (${lowerFloorSql("(select m.message_ms from m where exists (select 1 from again) or exists (select 1 from added))")})
     select pg_notify('${WORK_CHANNEL}', '') from (select * from again union all select * from added) r`,
    [messageId, endpointId, defaultMaxAttempts],
  );
  return rowCount !== 0;
}

/** The delivery's status, within `appId` unless that is null; null when there is none. */
export async function deliveryStatus(
  db: Queryable,
  id: number,
  appId: string | null,
): Promise<string | null> {
  const rows = await byDeliveryId(
    db,
    id,
    async ([lo, hi]) =>
      (
        await db.query<{ status: string }>(
          `select status from deliveries
           where id = $1::bigint and ${deliveryIdRangeSql("", "$3", "$4")}
             and ($2::text is null or app_id = $2::text)`,
          [id, appId, lo, hi],
        )
      ).rows,
    (r) => r.length > 0,
  );
  return rows[0]?.status ?? null;
}
