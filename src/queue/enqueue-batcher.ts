/**
 * Group commit for API ingest: messages accepted by concurrent requests are written
 * together, many per statement and transaction, so they share one WAL flush instead of
 * paying one each (with fsync at several ms, one commit per message caps ingest at a few
 * hundred per second). While a batch is being written the next one fills up; a request
 * waits at most for the batch in front of it. Each message is still committed, with all
 * its deliveries, before its request is answered (SPEC §2.1), and the workers are woken
 * by the commit itself.
 *
 * If a batch fails, its messages are retried one by one, so one bad message (say, its app
 * was just deleted) fails alone.
 *
 * When a write cannot keep up (`secondWriterAt` or more messages wait behind it), a second
 * write starts beside it on another connection, so PostgreSQL's second core works on one
 * batch while the first commits; it stops once the queue is short again, so batches stay
 * large. With 64 clients back to back it raised ingest in each of five alternating pairs
 * of runs here (median +10%), for up to 10% more database CPU per message
 * (docs/performance.md).
 *
 * Lifecycle: `enqueue` is refused until `start()` and after `stop()`; `stop()` waits until
 * every message accepted before it is written (or has failed). Both are safe to call twice.
 */
import type { Pool } from "../db/pool.ts";
import { HookRelayError } from "../errors.ts";
import { ID_PREFIX, newId } from "../ids.ts";
import { type EnqueueResult, enqueueMessage, type NewMessage } from "./enqueue-message.ts";
import { WORK_CHANNEL } from "./work-channel.ts";

export interface EnqueueBatcher {
  /** accepts messages from now on */
  start(): void;
  /** refuses new messages and resolves once every accepted one is written or failed */
  stop(): Promise<void>;
  enqueue(message: NewMessage): Promise<EnqueueResult>;
}

interface Waiting {
  message: NewMessage;
  resolve(result: EnqueueResult): void;
  reject(err: unknown): void;
}

const BATCH_SQL = `
with input as (
  select *
  from unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[],
              $8::timestamptz[], $10::bigint[])
    with ordinality as i(id, app_id, event_type, event_id, payload, channels, tags, deliver_at, retention_ms, n)
),
msg as (
  insert into messages (id, app_id, event_type, event_id, payload, channels, tags, expires_at)
  select i.id, i.app_id, i.event_type, i.event_id, i.payload,
         -- channels and tags arrive as JSON arrays (arrays of arrays cannot be unnested)
         case when i.channels is null then null
              else array(select jsonb_array_elements_text(i.channels::jsonb)) end,
         case when i.tags is null then null
              else array(select jsonb_array_elements_text(i.tags::jsonb)) end,
         now() + i.retention_ms * interval '1 millisecond'
  from input i
  order by i.n
  on conflict (app_id, event_id) do nothing
  returning id, app_id, event_type, channels, created_at
),
fanout as (
  insert into deliveries (message_id, endpoint_id, app_id, max_attempts, next_attempt_at)
  select m.id, e.id, m.app_id, coalesce(e.max_attempts, $9::integer), coalesce(i.deliver_at, now())
  from msg m
  join input i on i.id = m.id
  join endpoints e on e.app_id = m.app_id
  where not e.disabled
    and (e.event_types is null or m.event_type = any (e.event_types))
    and (e.channels is null or e.channels && coalesce(m.channels, '{}'::text[]))
  returning message_id, next_attempt_at
),
fanned as (
  select message_id, count(*)::int as n from fanout group by message_id
),
-- Wakes the workers when the batch commits (one notification per batch, and only if a
-- delivery is due now). A transaction that notifies holds a global lock through its
-- commit, so the commits of two batches written at once follow each other (their
-- statements still run side by side); that saves the workers a round trip after the commit.
woken as (
  select pg_notify('${WORK_CHANNEL}', '') from fanout where next_attempt_at <= now() limit 1
)
select i.n, m.id, m.created_at, coalesce(f.n, 0) as deliveries, (select count(*) from woken) as woken
from input i
left join msg m on m.id = i.id
left join fanned f on f.message_id = i.id
order by i.n
`;

export function makeEnqueueBatcher(
  pool: Pool,
  defaultMaxAttempts: number,
  { maxBatch = 500, secondWriterAt = 16 }: { maxBatch?: number; secondWriterAt?: number } = {},
): EnqueueBatcher {
  let queue: Waiting[] = [];
  let writers = 0;
  let accepting = false;
  // messages accepted and not yet answered, and who waits for that to reach 0 (stop)
  let unanswered = 0;
  const idle: Array<() => void> = [];

  function answered(): void {
    unanswered--;
    if (unanswered === 0) for (const resolve of idle.splice(0)) resolve();
  }

  async function writeBatch(batch: Waiting[]): Promise<void> {
    const ids = batch.map(() => newId(ID_PREFIX.message));
    const json = (v: string[] | null | undefined) => (v ? JSON.stringify(v) : null);
    const { rows } = await pool.query({
      name: "hookrelay_enqueue_batch",
      text: BATCH_SQL,
      values: [
        ids,
        batch.map((w) => w.message.appId),
        batch.map((w) => w.message.eventType),
        batch.map((w) => w.message.eventId ?? null),
        batch.map((w) => w.message.payload),
        batch.map((w) => json(w.message.channels)),
        batch.map((w) => json(w.message.tags)),
        batch.map((w) => w.message.deliverAt ?? null),
        defaultMaxAttempts,
        batch.map((w) => w.message.retentionMs ?? null),
      ],
    });
    for (const [i, w] of batch.entries()) {
      const row = rows[i];
      if (row?.id) {
        w.resolve({
          messageId: row.id,
          createdAt: row.created_at,
          created: true,
          deliveries: row.deliveries,
        });
      } else {
        // A repeated eventId (possibly repeated within this very batch): the original.
        const existing = await pool.query(
          "select id, created_at from messages where app_id = $1::text and event_id = $2::text",
          [w.message.appId, w.message.eventId],
        );
        const found = existing.rows[0];
        if (found)
          w.resolve({
            messageId: found.id,
            createdAt: found.created_at,
            created: false,
            deliveries: 0,
          });
        else w.reject(new Error("message neither inserted nor found"));
      }
    }
  }

  function startWriter(): void {
    if (writers === 0 ? queue.length > 0 : writers === 1 && queue.length >= secondWriterAt)
      void drain();
  }

  async function drain(): Promise<void> {
    writers++;
    try {
      // a writer alone drains the queue; the second one only works off a long queue
      while (queue.length > 0 && (writers === 1 || queue.length >= secondWriterAt)) {
        const batch = queue.slice(0, maxBatch);
        queue = queue.slice(batch.length);
        try {
          await writeBatch(batch);
        } catch {
          // One by one: only the message that cannot be written fails.
          for (const w of batch) {
            enqueueMessage(pool, w.message, defaultMaxAttempts).then(w.resolve, w.reject);
          }
        }
      }
    } finally {
      writers--;
      startWriter();
    }
  }

  return {
    start() {
      accepting = true;
    },
    stop() {
      accepting = false;
      if (unanswered === 0) return Promise.resolve();
      return new Promise<void>((resolve) => idle.push(resolve));
    },
    enqueue(message) {
      if (!accepting) {
        return Promise.reject(
          new HookRelayError("HR_ERR_NOT_RUNNING", "the enqueue batcher is not running"),
        );
      }
      unanswered++;
      return new Promise<EnqueueResult>((resolve, reject) => {
        queue.push({
          message,
          resolve(result) {
            answered();
            resolve(result);
          },
          reject(err) {
            answered();
            reject(err);
          },
        });
        startWriter();
      });
    },
  };
}
