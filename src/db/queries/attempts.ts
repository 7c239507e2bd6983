/** Delivery attempts, one row per HTTP request made: the rows behind /attempt listings. */
import { INTERVAL_MS } from "../../domain/partition-interval.ts";
import { ID_PREFIX, idTimeMs } from "../../ids.ts";
import type { Queryable } from "../pool.ts";
import {
  attemptIdAt,
  attemptsSinceSql,
  attemptTimeOf,
  LEGACY_ATTEMPT_ID_END,
} from "../sql/attempt-ids.ts";
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
 * The id ranges a newest-first page reads: the first window is the UTC day of its newest
 * possible row (now, or the walk's top: the cursor, `before` plus the skew), and each
 * window after it reaches further back (1, 1, 2, 4, 8, 16 days: 32 days below the first
 * one's in 7 windows); one last statement reads all that is left (the oldest periods, the
 * legacy partition). A day is a period of the default interval, and 24 of the hourly one.
 */
const DAY_MS = INTERVAL_MS.day;
const WALK_WINDOWS = 7;

/** The walk's windows below `top` (null: none), newest first, as [lo, hi) (null: open). */
export function attemptWindows(
  top: number | null,
  topMs: number,
  sinceId: number | null,
): Array<{ lo: number | null; hi: number | null }> {
  const windows: Array<{ lo: number | null; hi: number | null }> = [];
  let hi = top;
  let start = topMs - (topMs % DAY_MS);
  let span = DAY_MS;
  for (let i = 0; i < WALK_WINDOWS; i++) {
    const lo = attemptIdAt(start);
    if (sinceId !== null && lo <= sinceId) break;
    if (hi === null || lo < hi) windows.push({ lo, hi });
    hi = hi === null ? lo : Math.min(hi, lo);
    start -= span;
    if (i > 0) span *= 2;
  }
  windows.push({ lo: null, hi });
  return windows;
}

/**
 * A page of attempts in id order (newest first by default). An attempt is never older than
 * its message, nor than an `after` bound, so either, when known, becomes an id bound that
 * leaves out the partitions before it (docs/history.md). A newest-first page reads its id
 * ranges newest first, a statement each with the range's bounds as values (PostgreSQL plans
 * only the range's partitions), and stops once the page is full: an endpoint's page costs
 * its newest day's partition, not every period's (attemptWindows).
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
  const text = `select ${COLUMNS} from attempts
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
       -- the walk's id range (values, so the plan holds only its partitions)
       and ($11::bigint is null or id >= $11::bigint)
       and ($12::bigint is null or id < $12::bigint)
       ${since === null ? "" : `and ${attemptsSinceSql("attempts", "$13::timestamptz")}`}
     order by id ${page.direction} limit $4::integer`;
  const run = async (lo: number | null, hi: number | null, limit: number) =>
    (
      await db.query<AttemptRow>(text, [
        filter.messageId,
        filter.endpointId,
        page.cursor,
        limit,
        filter.outcome,
        filter.before ?? null,
        filter.after ?? null,
        filter.statusCodeClass ?? null,
        filter.eventTypes ?? null,
        filter.channel ?? null,
        lo,
        hi,
        ...(since === null ? [] : [since]),
      ])
    ).rows;
  const newestFirst = page.direction === "desc" && (page.cursor === null || page.op === "<");
  // a cursor in the legacy partition (ids without time) has only that partition below it
  if (!newestFirst || (page.cursor !== null && page.cursor < LEGACY_ATTEMPT_ID_END)) {
    return run(null, null, page.limit);
  }
  // the walk's top: the cursor, and what \`before\` allows (an attempt's id, from the
  // database's clock, is at most the skew past its started_at, from a worker's)
  let top = page.cursor;
  if (filter.before) {
    const beforeId = attemptIdAt(filter.before.getTime() + CLOCK_SKEW_MS + 1000);
    top = top === null ? beforeId : Math.min(top, beforeId);
  }
  const topMs = Math.min(Date.now(), top === null ? Date.now() : attemptTimeOf(top));
  const rows: AttemptRow[] = [];
  const sinceId = since === null ? null : attemptIdAt(since.getTime());
  for (const w of attemptWindows(top, topMs, sinceId)) {
    rows.push(...(await run(w.lo, w.hi, page.limit - rows.length)));
    if (rows.length >= page.limit) break;
  }
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
