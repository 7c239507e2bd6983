/** Messages of an app: the rows behind /api/v1/app/{app}/msg. */
import type { Queryable } from "../pool.ts";
import { messageMsCandidates, messageMsOf } from "../sql/message-ms.ts";
import type { PageWindow } from "./page-window.ts";

export interface MessageRow {
  id: string;
  event_type: string;
  event_id: string | null;
  /** the payload's JSON text exactly as the producer sent it */
  payload: string;
  channels: string[] | null;
  tags: string[] | null;
  created_at: Date;
  /** docs/delivery.md, "Ordering"; null: unordered */
  ordering_key: string | null;
}

const COLUMNS = "id, event_type, event_id, payload, channels, tags, created_at, ordering_key";

/** Narrows a listing of messages; null means "any". */
export interface MessageFilter {
  eventTypes: string[] | null;
  channel: string | null;
  tag: string | null;
  before: Date | null;
  after: Date | null;
  /**
   * hookrelay's: only messages with a delivery (to `endpointId` when set) in one of these
   * states; with `endpointId` alone, messages that have a delivery to that endpoint
   */
  deliveryStatuses?: string[] | null;
  endpointId?: string | null;
}

export async function getMessage(db: Queryable, id: string): Promise<MessageRow | null> {
  const { rows } = await db.query<MessageRow>(
    `select ${COLUMNS} from messages where id = $1::text and ${messageMsOf("", "$1::text")}`,
    [id],
  );
  return rows[0] ?? null;
}

/** A message of the app by id or by the producer's eventId (the id wins); null if absent. */
export async function findMessage(
  db: Queryable,
  appId: string,
  idOrEventId: string,
): Promise<MessageRow | null> {
  const { rows } = await db.query<MessageRow>(
    // the partitions of the id, and of the message that holds the eventId (one per app:
    // message_event_ids, migration 0033), rather than every day's; each id's millisecond
    // and the one after (src/db/sql/message-ms.ts)
    `with held as (
       select k.message_id from message_event_ids k
       where k.app_id = $1::text and k.event_id = $2::text
     )
     select ${COLUMNS} from messages
     where app_id = $1::text and (id = $2::text or event_id = $2::text)
       and message_ms in (${messageMsCandidates("$2::text")}, 0,
                          ${messageMsCandidates("(select message_id from held)")})
     order by (id = $2::text) desc limit 1`,
    [appId, idOrEventId],
  );
  return rows[0] ?? null;
}

/**
 * Which deliveries a page keeps its messages by (MessageFilter's deliveryStatuses and
 * endpointId). In general a probe per candidate message through deliveries' unique
 * (message_id, endpoint_id) index: the page walks the app's messages in id order and stops
 * at its limit, cheap when the state is common, slow when it is rare (docs/cli.md). Dead
 * letters alone are found through their partial indexes instead (the app's, or the
 * endpoint's, migration 0019), so a page of them costs what the app's dead letters number.
 */
function deliveryPart(filter: MessageFilter): string {
  const statuses = filter.deliveryStatuses ?? null;
  // every variant names $9 and $10, so PostgreSQL always knows their types
  if (statuses === null && !filter.endpointId)
    return "and $9::text[] is null and $10::text is null";
  if (statuses?.length === 1 && statuses[0] === "dead_letter")
    return `and id in (
             select d.message_id from deliveries d
             where d.app_id = $1::text and d.dead_lettered and $9::text[] is not null
               and ($10::text is null or d.endpoint_id = $10::text))`;
  return `and exists (
             select 1 from deliveries d
             where d.message_id = messages.id and d.message_ms = messages.message_ms
               and ($10::text is null or d.endpoint_id = $10::text)
               and ($9::text[] is null or d.status = any ($9::text[])))`;
}

/** A page of the app's messages in id (creation) order. */
export async function listMessages(
  db: Queryable,
  appId: string,
  filter: MessageFilter,
  page: PageWindow,
): Promise<MessageRow[]> {
  const { rows } = await db.query<MessageRow>(
    `select ${COLUMNS} from messages
     where app_id = $1::text and ($2::text is null or id ${page.op} $2::text)
       and ($4::text[] is null or event_type = any ($4::text[]))
       and ($5::text is null or $5::text = any (channels))
       and ($6::timestamptz is null or created_at < $6::timestamptz)
       and ($7::timestamptz is null or created_at > $7::timestamptz)
       and ($8::text is null or $8::text = any (tags))
       ${deliveryPart(filter)}
     order by id ${page.direction} limit $3::integer`,
    [
      appId,
      page.cursor,
      page.limit,
      filter.eventTypes,
      filter.channel,
      filter.before,
      filter.after,
      filter.tag,
      filter.deliveryStatuses ?? null,
      filter.endpointId ?? null,
    ],
  );
  return rows;
}
