/**
 * What a replay task sends (docs/recovery.md), as SQL over a task relation `t` (its kind,
 * app, endpoint, window, filters and cursor): the app's messages created in the window, in
 * (created_at, id) order through messages_app_created_idx (migration 0017), each with its
 * delivery row for the endpoint if it has one, and whether the task's kind takes it:
 *
 * | kind                  | takes                                                        |
 * | endpoint.recover      | rows failed (waiting for a retry) or dead-lettered           |
 * | endpoint.replay       | no row yet but matching the endpoint's event types and       |
 * |                       | channels (sent before it existed, or while it was disabled   |
 * |                       | with an older hookrelay), or a row canceled (by an operator, |
 * |                       | or skipped while disabled)                                   |
 * | endpoint.bulk-replay  | rows in one of the statuses asked for (default: delivered,   |
 * |                       | failed, dead_letter, canceled), matching its event types,    |
 * |                       | channel, tag and status-code class                           |
 *
 * Rows pending or in flight are never taken: they are on their way already. Messages whose
 * own retention has passed (messages.expires_at) are skipped: their payload is going; so
 * are expunged ones (messages.expunged_at: their payload is gone, docs/delivery.md).
 */

/** The kinds of task, as Svix names them. */
export const TASK_KINDS = ["endpoint.recover", "endpoint.replay", "endpoint.bulk-replay"] as const;
export type TaskKind = (typeof TASK_KINDS)[number];

/** The delivery statuses a bulk replay may select, and its default (all of them). */
export const REPLAYABLE_STATUSES = ["delivered", "failed", "dead_letter", "canceled"] as const;
export type ReplayableStatus = (typeof REPLAYABLE_STATUSES)[number];

/** The bulk replay's filters, stored as the task's `params`. */
export interface ReplayFilters {
  eventTypes?: string[];
  channel?: string;
  tag?: string;
  statuses?: ReplayableStatus[];
  /** Svix's StatusCodeClass: 0 (no response), 100, 200, 300, 400, 500 */
  statusCodeClass?: number;
}

/**
 * The scanned messages and their candidate rows, as CTEs `scanned` (at most `limit` of
 * them, or the whole window when `limit` is null) and `cand` (each taken one numbered `rn`
 * in scan order, with its row's id and status if it has one), after the CTE that defines
 * `t`. The endpoint is `ep` (its filters).
 */
export function scanCtes(limit: string | null): string {
  return `
ep as (
  select e.id, e.event_types, e.channels from endpoints e join t on e.id = t.endpoint_id
),
scanned as (
  select m.id, m.created_at, m.event_type, m.channels, m.tags, m.message_ms
  from t join messages m
    on m.app_id = t.app_id
   and m.created_at < t.until
   -- the cursor: the last message looked at (row comparison: one index range)
   and (m.created_at, m.id) > (t.cursor_at, t.cursor_id)
  where (m.expires_at is null or m.expires_at > now())
    and m.expunged_at is null
  order by m.created_at, m.id
  ${limit === null ? "" : `limit ${limit}`}
),
cand as (
  select s.id as message_id, s.message_ms, s.created_at, d.id as delivery_id, d.status,
         row_number() over (order by s.created_at, s.id) as rn
  from scanned s
  cross join t
  cross join ep
  left join deliveries d
    on d.message_id = s.id and d.endpoint_id = t.endpoint_id and d.message_ms = s.message_ms
  where ${TAKES}
)`;
}

/** Whether the task `t` takes message `s` with its row `d` (null when it has none). */
const TAKES = `
  case t.kind
    when 'endpoint.recover' then d.status in ('failed', 'dead_letter')
    when 'endpoint.replay' then
      (d.id is null
        and (ep.event_types is null or s.event_type = any (ep.event_types))
        and (ep.channels is null or ep.channels && coalesce(s.channels, '{}'::text[])))
      or d.status = 'canceled'
    else
      -- jsonb ? text: the string is an element of the array
      (t.params -> 'statuses') ? d.status
      and (t.params -> 'eventTypes' is null or (t.params -> 'eventTypes') ? s.event_type)
      and (t.params ->> 'channel' is null or (t.params ->> 'channel') = any (s.channels))
      and (t.params ->> 'tag' is null or (t.params ->> 'tag') = any (s.tags))
      and (t.params -> 'statusCodeClass' is null
           or case (t.params ->> 'statusCodeClass')::int
                when 0 then d.last_status_code is null
                else d.last_status_code / 100 * 100 = (t.params ->> 'statusCodeClass')::int end)
  end`;

/** The statuses a task may move a row from, rechecked when the row is updated. */
export const REQUEUE_FROM = `('failed', 'dead_letter', 'delivered', 'canceled')`;
