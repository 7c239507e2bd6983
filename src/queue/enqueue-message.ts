/**
 * Accepting messages (docs/delivery.md, Durable acceptance): each message row and one
 * delivery per matching endpoint are written in one statement, so they commit together.
 * One statement serves both callers: `enqueueMessage` writes one message (the library's
 * `send()`, inside the caller's transaction), and the API's group commit writes many at
 * once (enqueue-batcher.ts). An endpoint matches when its event-type filter is empty or
 * names the event type, and it listens to all channels or shares one with the message. A
 * repeated producer `eventId` inserts nothing and answers with the original message: one
 * message per (application, eventId) is kept by the message_event_ids table (migration
 * 0033), which the statement writes first.
 *
 * A disabled endpoint gets its row too (docs/delivery.md, "While an endpoint is
 * disabled"): pending, held until it is enabled (the claim skips disabled endpoints), or,
 * when its whileDisabled (else the process default) is "skip", canceled with
 * last_error_kind 'endpoint_disabled', which replay-missing sends again.
 *
 * Waking the workers: the statement NOTIFYs itself, so the wake-up arrives exactly when the
 * caller's transaction commits (the library's transactional outbox), once per statement and
 * only if a delivery is due now.
 */

import type { WhileDisabled } from "../config.ts";
import { namedSql } from "../db/named-sql.ts";
import type { Queryable } from "../db/pool.ts";
import { tablePrefix as t } from "../db/schema-name.ts";
import { orderingKeySql } from "../db/sql/ordering-key.ts";
import { WORK_CHANNEL } from "../db/work-channel.ts";
import { effectiveSql } from "../domain/endpoint-policy-derived.ts";
import { ID_PREFIX, idTimeMs, newId } from "../ids.ts";

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
  /**
   * Deliveries of messages with the same key go out one at a time per endpoint, in the
   * order the messages were accepted (docs/delivery.md, "Ordering"). Null: unordered.
   */
  orderingKey?: string | null;
  /**
   * The W3C traceparent its deliveries continue (docs/telemetry.md, "Traces"), already
   * checked (lib/traceparent.ts). Null: none.
   */
  traceparent?: string | null;
}

export interface EnqueueResult {
  messageId: string;
  createdAt: Date;
  /** false when eventId matched an existing message */
  created: boolean;
  deliveries: number;
}

/** One array element per message, in order. */
interface EnqueueParams {
  ids: string[];
  appIds: string[];
  eventTypes: string[];
  eventIds: (string | null)[];
  payloads: string[];
  /** JSON arrays as text: arrays of arrays cannot be unnested */
  channels: (string | null)[];
  tags: (string | null)[];
  deliverAts: (Date | null)[];
  retentionsMs: (number | null)[];
  orderingKeys: (string | null)[];
  traceparents: (string | null)[];
  /** the millisecond each id carries: the rows' partition key (docs/history.md) */
  messageMs: number[];
  defaultMaxAttempts: number;
  defaultWhileDisabled: WhileDisabled;
}

/** How a write names its tables and treats disabled endpoints. */
export interface EnqueueOptions {
  /** name the tables in this schema (the library's, on the caller's connection) */
  schema?: string;
  /** what a disabled endpoint without its own whileDisabled does; default "hold" */
  whileDisabled?: WhileDisabled;
}

/** The skipped row's error kind and text (docs/delivery.md, "While an endpoint is disabled"). */
export const SKIPPED_KIND = "endpoint_disabled";
export const SKIPPED_TEXT =
  "skipped: the endpoint was disabled when the message arrived (whileDisabled: skip); replay-missing sends it";

/**
 * The statements, naming the tables in `schema` when given (the library's, on a caller's
 * connection whose search_path is the caller's: docs/database.md, "Roles and schema"), in
 * the connection's search_path otherwise.
 */
const enqueueSql = (schema: string | undefined) =>
  namedSql<EnqueueParams>(
    `
with input as (
  select *
  from unnest($ids::text[], $appIds::text[], $eventTypes::text[], $eventIds::text[],
              $payloads::text[], $channels::text[], $tags::text[], $deliverAts::timestamptz[],
              $retentionsMs::bigint[], $orderingKeys::text[], $traceparents::text[],
              $messageMs::bigint[])
    with ordinality as i(id, app_id, event_type, event_id, payload, channels, tags, deliver_at, retention_ms,
                         ordering_key, traceparent, message_ms, n)
),
-- The eventIds this statement takes (migration 0033): a message with an eventId is written
-- only when its (app, eventId) row is, so a repeat, in this batch or after another
-- transaction's, writes nothing (that transaction's row is waited for, then seen).
won as (
  insert into ${t(schema)}message_event_ids (app_id, event_id, message_id)
  select i.app_id, i.event_id, i.id from input i where i.event_id is not null
  order by i.n
  on conflict (app_id, event_id) do nothing
  returning message_id
),
msg as (
  insert into ${t(schema)}messages (id, app_id, event_type, event_id, payload, channels, tags, expires_at,
                                    ordering_key, traceparent, message_ms)
  select i.id, i.app_id, i.event_type, i.event_id, i.payload,
         case when i.channels is null then null
              else array(select jsonb_array_elements_text(i.channels::jsonb)) end,
         case when i.tags is null then null
              else array(select jsonb_array_elements_text(i.tags::jsonb)) end,
         now() + i.retention_ms * interval '1 millisecond',
         i.ordering_key, i.traceparent, i.message_ms
  from input i
  where i.event_id is null or i.id in (select message_id from won)
  order by i.n
  returning id, app_id, event_type, channels, created_at, message_ms
),
-- The fan-out: one delivery per matching endpoint of each message written, disabled ones
-- included. A disabled endpoint's row is pending (held: the claim passes it by until the
-- endpoint is enabled) or, if it skips while disabled, canceled with the reason. (The
-- lateral is a plain expression the planner folds in: no function call per row.) Each row
-- gets its message's ordering key, or, for a FIFO endpoint, the empty string, which no
-- message's key can be: the endpoint's one key (docs/delivery.md, "Ordering"). The rows
-- are numbered in the batch's order, which is the order its messages were accepted in.
fanout as (
  insert into ${t(schema)}deliveries (message_id, endpoint_id, app_id, max_attempts, next_attempt_at,
                                      status, last_error_kind, last_error, ordering_key, message_ms)
  select m.id, e.id, m.app_id, ${effectiveSql("e", "maxAttempts")},
         coalesce(i.deliver_at, now()),
         case when s.skip then 'canceled' else 'pending' end,
         case when s.skip then '${SKIPPED_KIND}' end,
         case when s.skip then '${SKIPPED_TEXT}' end,
         ${orderingKeySql("e", "i.ordering_key")}, m.message_ms
  from msg m
  join input i on i.id = m.id
  join ${t(schema)}endpoints e on e.app_id = m.app_id
  cross join lateral (
    select e.disabled and ${effectiveSql("e", "whileDisabled")} = 'skip' as skip
  ) s
  where (e.event_types is null or m.event_type = any (e.event_types))
    and (e.channels is null or e.channels && coalesce(m.channels, '{}'::text[]))
  -- ids in acceptance order: an ordered key's order is its rows' id order
  order by i.n
  returning message_id, next_attempt_at, status
),
fanned as (
  select message_id, count(*)::int as n from fanout group by message_id
),
-- Wakes the workers when the statement's transaction commits (one notification, and only
-- if a pending delivery is due now; one held for a disabled endpoint wakes them for
-- nothing, which costs one claim that finds nothing). A transaction that notifies holds a global lock through its
-- commit, so the commits of two batches written at once follow each other (their
-- statements still run side by side); that saves the workers a round trip after the commit.
woken as (
  select pg_notify('${WORK_CHANNEL}', '') from fanout
  where status = 'pending' and next_attempt_at <= now() limit 1
)
select i.n, m.id, m.created_at, coalesce(f.n, 0) as deliveries, (select count(*) from woken) as woken
from input i
left join msg m on m.id = i.id
left join fanned f on f.message_id = i.id
order by i.n
`,
    // (the name predates the single-message callers: one prepared statement for both)
    `hookrelay_enqueue_batch${schema === undefined ? "" : `_${schema}`}`,
  );

// The original of a message whose eventId was taken: a new statement, so it sees a
// message another transaction committed meanwhile, and one written earlier in the same
// batch.
const originalsSql = (schema: string | undefined) =>
  namedSql<{ appIds: string[]; eventIds: string[] }>(`
select k.n, m.id, m.created_at
from unnest($appIds::text[], $eventIds::text[]) with ordinality as k(app_id, event_id, n)
join ${t(schema)}messages m on m.app_id = k.app_id and m.event_id = k.event_id`);

const compile = (schema: string | undefined) => ({
  enqueue: enqueueSql(schema),
  originals: originalsSql(schema),
});
/** Compiled once per schema; the search_path's when the module loads. */
const statements = new Map([[undefined as string | undefined, compile(undefined)]]);
function statementsFor(schema: string | undefined) {
  const found = statements.get(schema) ?? compile(schema);
  statements.set(schema, found);
  return found;
}

const json = (v: string[] | null | undefined) => (v ? JSON.stringify(v) : null);

/**
 * Writes messages and their deliveries in one statement; one answer per message, in
 * order: what was written, or the original for a repeated eventId. An answer is an Error
 * when the original cannot be read (gone again, or the lookup failed): only the statement
 * itself throws, so a caller that retries on a throw never writes a message twice.
 */
export async function writeMessages(
  db: Queryable,
  messages: readonly NewMessage[],
  defaultMaxAttempts: number,
  { schema, whileDisabled = "hold" }: EnqueueOptions = {},
): Promise<(EnqueueResult | Error)[]> {
  const sql = statementsFor(schema);
  const ids = messages.map(() => newId(ID_PREFIX.message));
  const { rows } = await db.query(
    sql.enqueue.query({
      ids,
      appIds: messages.map((m) => m.appId),
      eventTypes: messages.map((m) => m.eventType),
      eventIds: messages.map((m) => m.eventId ?? null),
      payloads: messages.map((m) => m.payload),
      channels: messages.map((m) => json(m.channels)),
      tags: messages.map((m) => json(m.tags)),
      deliverAts: messages.map((m) => m.deliverAt ?? null),
      retentionsMs: messages.map((m) => m.retentionMs ?? null),
      orderingKeys: messages.map((m) => m.orderingKey ?? null),
      traceparents: messages.map((m) => m.traceparent ?? null),
      messageMs: ids.map((id) => idTimeMs(id, ID_PREFIX.message) ?? 0),
      defaultMaxAttempts,
      defaultWhileDisabled: whileDisabled,
    }),
  );
  const notFound = new Error("message neither inserted nor found");
  const results: (EnqueueResult | Error)[] = messages.map((_, i) => {
    const row = rows[i];
    return row?.id
      ? { messageId: row.id, createdAt: row.created_at, created: true, deliveries: row.deliveries }
      : notFound;
  });
  const repeated = messages.flatMap((m, i) =>
    results[i] === notFound && m.eventId != null ? [{ i, appId: m.appId, eventId: m.eventId }] : [],
  );
  if (repeated.length === 0) return results;
  try {
    const originals = await db.query(
      sql.originals.query({
        appIds: repeated.map((r) => r.appId),
        eventIds: repeated.map((r) => r.eventId),
      }),
    );
    for (const o of originals.rows) {
      const r = repeated[Number(o.n) - 1];
      if (r)
        results[r.i] = { messageId: o.id, createdAt: o.created_at, created: false, deliveries: 0 };
    }
  } catch (err) {
    const failed = new Error("the original of a repeated eventId could not be read", {
      cause: err,
    });
    for (const r of repeated) results[r.i] = failed;
  }
  return results;
}

/**
 * Accepts one message (with its deliveries); inside the caller's transaction if `db` is
 * one. `options.schema`: name the tables there (the library's, on the caller's connection).
 */
export async function enqueueMessage(
  db: Queryable,
  message: NewMessage,
  defaultMaxAttempts: number,
  options: EnqueueOptions = {},
): Promise<EnqueueResult> {
  const [result = new Error("no answer for the message")] = await writeMessages(
    db,
    [message],
    defaultMaxAttempts,
    options,
  );
  if (result instanceof Error) throw result;
  return result;
}
