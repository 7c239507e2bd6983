/** Delivery attempts, one row per HTTP request made: the rows behind /attempt listings. */
import { ID_PREFIX, idTimeMs } from "../../ids.ts";
import type { Queryable } from "../pool.ts";
import { attemptsSinceSql } from "../sql/attempt-ids.ts";
import { messageMsOf } from "../sql/message-ms.ts";
import type { PageWindow } from "./page-window.ts";

export interface AttemptRow {
  id: number;
  message_id: string;
  endpoint_id: string;
  url: string;
  attempt_number: number;
  /** 'scheduled', 'manual' (resend, requeue) or 'replay' (a background task, docs/recovery.md) */
  trigger: string;
  started_at: Date;
  latency_ms: number;
  outcome: "success" | "failure";
  status_code: number | null;
  error_kind: string | null;
  error: string | null;
  /** the first 1 KiB of the response body */
  response_body: string | null;
  /** the transport's own detail (attempts.detail: broker destinations); null for HTTP */
  detail: Record<string, unknown> | null;
}

const COLUMNS = `id, message_id, endpoint_id, url, attempt_number, trigger, started_at,
  latency_ms, outcome, status_code, error_kind, error, response_body, detail`;

/** Narrows a listing of attempts; null means "any". */
export interface AttemptFilter {
  messageId: string | null;
  endpointId: string | null;
  /** 'success' or 'failure'; any other value matches nothing */
  outcome: string | null;
  /** started before / after (Svix's `before`, `after`) */
  before?: Date | null;
  after?: Date | null;
  /**
   * Svix's status_code_class: 0 is no response (a network error, a timeout), 100-500 the
   * hundred the response's status is in
   */
  statusCodeClass?: number | null;
  /** attempts of messages of these event types / in this channel */
  eventTypes?: string[] | null;
  channel?: string | null;
}

/**
 * How far the clocks of hookrelay's hosts and the database may disagree: a message id's
 * time and an attempt's started_at come from a Node process's clock, the attempt's id from
 * the database's.
 */
const CLOCK_SKEW_MS = 3_600_000;

/**
 * A page of attempts in id order (newest first by default). An attempt is never older than
 * its message, nor than an `after` bound, so either, when known, becomes an id bound that
 * leaves out the partitions before it (docs/history.md).
 */
export async function listAttempts(
  db: Queryable,
  filter: AttemptFilter,
  page: PageWindow<number>,
): Promise<AttemptRow[]> {
  const messageTime =
    filter.messageId === null ? null : idTimeMs(filter.messageId, ID_PREFIX.message);
  const bounds = [messageTime, filter.after?.getTime() ?? null].filter((t) => t !== null);
  const since = bounds.length === 0 ? null : new Date(Math.max(...bounds) - CLOCK_SKEW_MS);
  const { rows } = await db.query<AttemptRow>(
    `select ${COLUMNS} from attempts
     where ($1::text is null or message_id = $1::text)
       and ($2::text is null or endpoint_id = $2::text)
       and ($3::bigint is null or id ${page.op} $3::bigint)
       and ($5::text is null or outcome = $5::text)
       and ($6::timestamptz is null or started_at < $6::timestamptz)
       and ($7::timestamptz is null or started_at > $7::timestamptz)
       and ($8::integer is null or case when $8::integer = 0 then status_code is null
             else status_code >= $8::integer and status_code < $8::integer + 100 end)
       -- a probe per candidate attempt through messages' primary key, as the page walks
       -- the endpoint's (or message's) attempts in id order and stops at the limit; the
       -- "offset 0" keeps the probe a subplan, which PostgreSQL cannot pull up into a
       -- semi-join (one it could run as a hash of every message of those types). A guard,
       -- not a measured fix: test/browse-explain.test.ts's plans stay on indexes with or
       -- without it, at 250,000 rows and at 1,000,000
       and ($9::text[] is null and $10::text is null or exists (
             select 1 from messages m
             where m.id = attempts.message_id and ${messageMsOf("m", "attempts.message_id")}
               and ($9::text[] is null or m.event_type = any ($9::text[]))
               and ($10::text is null or $10::text = any (m.channels))
             offset 0))
       ${since === null ? "" : `and ${attemptsSinceSql("attempts", "$11::timestamptz")}`}
     order by id ${page.direction} limit $4::integer`,
    [
      filter.messageId,
      filter.endpointId,
      page.cursor,
      page.limit,
      filter.outcome,
      filter.before ?? null,
      filter.after ?? null,
      filter.statusCodeClass ?? null,
      filter.eventTypes ?? null,
      filter.channel ?? null,
      ...(since === null ? [] : [since]),
    ],
  );
  return rows;
}

/** One attempt of the message; null if absent. */
export async function getAttempt(
  db: Queryable,
  id: number,
  messageId: string,
): Promise<AttemptRow | null> {
  const { rows } = await db.query<AttemptRow>(
    `select ${COLUMNS} from attempts where id = $1::bigint and message_id = $2::text`,
    [id, messageId],
  );
  return rows[0] ?? null;
}
