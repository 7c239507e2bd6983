/**
 * Dead letters: listing with filters, per-endpoint analysis, requeue and cancel.
 * A dead letter is a delivery in status dead_letter; `updated_at` is when it died: the
 * attempt that killed it is the last write a dead row gets (docs/delivery.md, Delivery
 * states: every later transition moves it out of dead_letter).
 */
import { type NamedSql, namedSql } from "../db/named-sql.ts";
import type { Queryable } from "../db/pool.ts";
import { queryGeneric } from "../db/queries/generic-plan.ts";
import { lowerFloorSql } from "../db/sql/delivery-floor.ts";
import { byDeliveryId, deliveryIdRangeSql } from "../db/sql/delivery-id-blocks.ts";
import { CANCELABLE, cancelSet, requeueSet } from "../db/sql/delivery-states.ts";
import { WORK_CHANNEL } from "../db/work-channel.ts";
import { effectiveSql } from "../domain/endpoint-policy-derived.ts";
import { ErrorKind } from "../domain/retry-policy.ts";
import { detectPattern, type Pattern } from "./dead-letter-patterns.ts";

export interface DeadLetterFilter {
  appId?: string | null;
  endpointId?: string | null;
  statusCode?: number | null;
  errorKind?: string | null;
  since?: Date | null;
  until?: Date | null;
}

/**
 * The dead letters a filter selects, over `deliveries d`: only the conditions the filter
 * sets, so each combination is a statement of its own, named (statement()), run with its
 * generic plan (db/queries/generic-plan.ts). A dead letter has no time bound (it stays in
 * its message's period), so these read every period's dead-letter indexes; planning them at
 * each call cost more than reading them (tens of ms at 85 partitions here).
 */
const FILTERS: ReadonlyArray<[keyof DeadLetterFilter, string]> = [
  ["appId", "d.app_id = $appId::text"],
  ["endpointId", "d.endpoint_id = $endpointId::text"],
  ["statusCode", "d.last_status_code = $statusCode::integer"],
  ["errorKind", "d.last_error_kind = $errorKind::text"],
  ["since", "d.updated_at >= $since::timestamptz"],
  ["until", "d.updated_at < $until::timestamptz"],
];

type FilterParams = Partial<Record<keyof DeadLetterFilter, unknown>>;

/** The filter's conditions, its parameters, and a key naming the combination. */
function filterOf(f: DeadLetterFilter): { sql: string; params: FilterParams; key: string } {
  const set = FILTERS.filter(([k]) => f[k] !== null && f[k] !== undefined);
  return {
    sql: ["d.dead_lettered", ...set.map(([, c]) => c)].join("\n    and "),
    params: Object.fromEntries(set.map(([k]) => [k, f[k]])),
    key: set.map(([k]) => k).join("_") || "all",
  };
}

/** One named statement per text (a filter's combination), compiled once. */
const statements = new Map<string, NamedSql<Record<string, unknown>>>();
function statement(name: string, text: string): NamedSql<Record<string, unknown>> {
  let compiled = statements.get(name);
  if (!compiled) {
    compiled = namedSql<Record<string, unknown>>(text, name);
    statements.set(name, compiled);
  }
  return compiled;
}

export interface DeadLetter {
  deliveryId: number;
  messageId: string;
  endpointId: string;
  appId: string;
  eventType: string;
  url: string;
  attempts: number;
  statusCode: number | null;
  errorKind: string | null;
  error: string | null;
  deadAt: Date;
}

/**
 * A position in the list: when a dead letter died, to the microsecond (as PostgreSQL keeps
 * it; a Date would round it to the millisecond), and its row key for deaths in the same
 * microsecond.
 */
export interface DeadLetterPosition {
  /** microseconds since 1970-01-01 UTC, as a decimal string */
  deadAtMicros: string;
  deliveryId: number;
}

const listSql = (filter: string, after: boolean) =>
  // Newest death first, the row key breaking ties, so a page starts exactly after the last
  // one's position whatever dies meanwhile. The row comparison is an index condition of
  // deliveries_dead_letter_order_idx (and of the per-endpoint and per-app ones, migration
  // 0019), read backwards in each partition and merged. The page is taken from deliveries
  // alone, then joined: joined first, PostgreSQL hashed every message of every period
  // against every dead letter before sorting (3.1 s on a month of 3,000,000 messages,
  // docs/performance.md, scenario 19); the page's rows then find their message in its own
  // partition (message_ms) and their endpoint by key.
  `select d.id, d.message_id, d.endpoint_id, d.app_id, m.event_type, e.url, d.attempt_count,
            d.last_status_code, d.last_error_kind, d.last_error, d.updated_at,
            (extract(epoch from d.updated_at) * 1000000)::bigint::text as dead_at_micros
     from (select d.id, d.message_id, d.message_ms, d.endpoint_id, d.app_id, d.attempt_count,
                  d.last_status_code, d.last_error_kind, d.last_error, d.updated_at
           from deliveries d
           where ${filter}
             ${
               after
                 ? `and (d.updated_at, d.id) < ('epoch'::timestamptz + $afterMicros::bigint * interval '1 microsecond',
                                               $afterId::bigint)`
                 : ""
             }
           order by d.updated_at desc, d.id desc limit $limit::integer) d
     -- a probe per row (the limit keeps it one, whatever the tables' statistics say)
     cross join lateral (select m.event_type from messages m
                         where m.id = d.message_id and m.message_ms = d.message_ms limit 1) m
     join endpoints e on e.id = d.endpoint_id
     order by d.updated_at desc, d.id desc`;

/**
 * Dead letters, the newest death first, `limit` at a time; `after` is the position of the
 * last page's last row.
 */
export async function listDeadLetters(
  db: Queryable,
  filter: DeadLetterFilter,
  page: { limit: number; after?: DeadLetterPosition | null },
): Promise<(DeadLetter & { position: DeadLetterPosition })[]> {
  const f = filterOf(filter);
  const after = page.after ?? null;
  const { rows } = await queryGeneric(
    db,
    statement(
      `hookrelay_dead_letters_${f.key}${after ? "_after" : ""}`,
      listSql(f.sql, after !== null),
    ).query({
      ...f.params,
      ...(after && { afterMicros: after.deadAtMicros, afterId: after.deliveryId }),
      limit: page.limit,
    }),
  );
  return rows.map((r) => ({
    position: { deadAtMicros: r.dead_at_micros, deliveryId: Number(r.id) },
    deliveryId: r.id,
    messageId: r.message_id,
    endpointId: r.endpoint_id,
    appId: r.app_id,
    eventType: r.event_type,
    url: r.url,
    attempts: r.attempt_count,
    statusCode: r.last_status_code,
    errorKind: r.last_error_kind,
    error: r.last_error,
    deadAt: r.updated_at,
  }));
}

export interface EndpointDeadLetterAnalysis extends Pattern {
  endpointId: string;
  appId: string;
  url: string;
  deadCount: number;
  mostCommonError: string | null;
  mostCommonStatusCode: number | null;
  firstDeadAt: Date;
  lastDeadAt: Date;
  averageAttempts: number;
}

const analyzeSql = (filter: string) =>
  `with dead as (
       select d.id, d.endpoint_id, d.app_id, d.last_error, d.last_error_kind, d.last_status_code,
              d.attempt_count, d.updated_at,
              (d.last_status_code = 410 or d.last_error_kind = '${ErrorKind.gone}') as gone
       from deliveries d where ${filter}
     ),
     windows as (
       -- the most deaths within any 15 minutes (a sliding window, not clock-aligned bins)
       select endpoint_id, max(n)::int as max_in_15
       from (select endpoint_id,
                    count(*) over (partition by endpoint_id order by updated_at
                                   range between current row and interval '15 minutes' following) as n
             from dead) b
       group by endpoint_id
     )
     select d.endpoint_id, min(d.app_id) as app_id, e.url, count(*)::int as dead_count,
            mode() within group (order by d.last_error) as common_error,
            mode() within group (order by d.last_status_code) as common_status,
            min(d.updated_at) as first_at, max(d.updated_at) as last_at,
            avg(d.attempt_count)::float8 as avg_attempts,
            (count(*) filter (where d.last_status_code in (401, 403)))::int as credentials,
            (count(*) filter (where d.last_status_code = 429))::int as rate_limited,
            (count(*) filter (where d.gone))::int as gone,
            -- the newest death's answer (ties: the later row)
            (array_agg(d.gone order by d.updated_at desc, d.id desc))[1] as last_gone,
            (count(*) filter (where d.last_error_kind = '${ErrorKind.timeout}'))::int as timeouts,
            (count(*) filter (where d.last_error_kind = '${ErrorKind.missingField}'))::int as missing_field,
            (count(*) filter (where d.last_error_kind = '${ErrorKind.bodyRule}'))::int as body_rule,
            (count(*) filter (where d.last_error_kind = '${ErrorKind.proxy}'))::int as proxy,
            (count(*) filter (where d.last_error_kind = '${ErrorKind.tls}'))::int as tls,
            count(distinct date_trunc('hour', d.updated_at))::int as distinct_hours,
            w.max_in_15,
            count(*) over ()::int as endpoint_total
     from dead d
     join endpoints e on e.id = d.endpoint_id
     join windows w on w.endpoint_id = d.endpoint_id
     group by d.endpoint_id, e.url, w.max_in_15
     order by dead_count desc, d.endpoint_id
     limit $limit::integer offset $offset::integer`;

export interface DeadLetterAnalysis {
  /** most dead first, the page asked for */
  endpoints: EndpointDeadLetterAnalysis[];
  /** how many endpoints have dead letters matching the filter, on every page */
  endpointTotal: number;
}

/**
 * One analysis per endpoint with dead letters matching the filter, most dead first; a page
 * of them when `page` says so (the ranking is computed whole each time, so the page is an
 * offset into it).
 */
export async function analyzeDeadLetters(
  db: Queryable,
  filter: DeadLetterFilter,
  page: { limit?: number | null; offset?: number } = {},
): Promise<DeadLetterAnalysis> {
  const f = filterOf(filter);
  const { rows } = await queryGeneric(
    db,
    statement(`hookrelay_dead_letter_analysis_${f.key}`, analyzeSql(f.sql)).query({
      ...f.params,
      limit: page.limit ?? null,
      offset: page.offset ?? 0,
    }),
  );
  let endpointTotal = rows[0]?.endpoint_total ?? 0;
  if (rows.length === 0 && (page.offset ?? 0) > 0) {
    // past the end: the total still says how many there are
    endpointTotal = (await analyzeDeadLetters(db, filter, { limit: 1 })).endpointTotal;
  }
  return { endpoints: rows.map(analysisOfRow), endpointTotal };
}

// biome-ignore lint/suspicious/noExplicitAny: a row of analyzeSql
function analysisOfRow(r: any): EndpointDeadLetterAnalysis {
  return {
    endpointId: r.endpoint_id,
    appId: r.app_id,
    url: r.url,
    deadCount: r.dead_count,
    mostCommonError: r.common_error,
    mostCommonStatusCode: r.common_status,
    firstDeadAt: r.first_at,
    lastDeadAt: r.last_at,
    averageAttempts: Math.round(r.avg_attempts * 100) / 100,
    ...detectPattern({
      count: r.dead_count,
      credentials: r.credentials,
      rateLimited: r.rate_limited,
      gone: r.gone,
      lastGone: r.last_gone,
      timeouts: r.timeouts,
      maxIn15Minutes: r.max_in_15,
      firstAt: r.first_at,
      lastAt: r.last_at,
      distinctHours: r.distinct_hours,
      missingField: r.missing_field,
      bodyRule: r.body_rule,
      proxy: r.proxy,
      tls: r.tls,
    }),
  };
}

export interface RequeueTarget {
  /** one delivery */
  deliveryId?: number;
  /** every dead letter of this endpoint */
  endpointId?: string;
  /** every dead (and, with includeFailed, failed) delivery that died/failed since then */
  since?: Date;
  appId?: string | null;
  includeFailed?: boolean;
}

const REQUEUE_SQL = namedSql<{
  deliveryId: number | null;
  /** the range of message_ms of deliveryId (byDeliveryId) */
  idLo: string;
  idHi: string;
  endpointId: string | null;
  since: Date | null;
  appId: string | null;
  includeFailed: boolean;
  by: string;
  defaultMaxAttempts: number;
}>(`
with target as (
  -- (the lock is taken inside: FOR UPDATE cannot sit beside a window function)
  select l.id, l.message_ms, l.endpoint_id,
         row_number() over (partition by l.endpoint_id order by l.id) as rn
  from (
    select d.id, d.message_ms, d.endpoint_id
    from deliveries d
    where (d.status = 'dead_letter' or ($includeFailed::boolean and d.status = 'failed'))
      and ($deliveryId::bigint is null
           or (d.id = $deliveryId::bigint and ${deliveryIdRangeSql("d", "$idLo", "$idHi")}))
      and ($endpointId::text is null or d.endpoint_id = $endpointId::text)
      and ($since::timestamptz is null or d.updated_at >= $since::timestamptz)
      and ($appId::text is null or d.app_id = $appId::text)
    for update of d
  ) l
),
paced as (
  select t.id, t.message_ms, ${effectiveSql("e", "maxAttempts")} as max_attempts,
         -- least() skips nulls: the strictest configured limit, per second
         now() + coalesce((t.rn - 1) / least(${effectiveSql("e", "ratePerSecond")}::float8,
                                             e.rate_per_minute / 60.0,
                                             e.rate_per_hour / 3600.0), 0) * interval '1 second' as due
  from target t join endpoints e on e.id = t.endpoint_id
),
requeued as (
  update deliveries d
  set ${requeueSet({ maxAttempts: "p.max_attempts", dueAt: "p.due" })},
      requeued_at = now(), requeued_by = $by::text
  from paced p
  -- each row in its own partition (a probe per row, not every period's by id)
  where d.id = p.id and d.message_ms = p.message_ms
    -- one delivery: its id's block bounds this read too, whatever the join
    and ($deliveryId::bigint is null or ${deliveryIdRangeSql("d", "$idLo", "$idHi")})
  returning d.message_ms
),
-- the claim reads the queue from the floor up (db/sql/delivery-floor.ts)
floor as (${lowerFloorSql("(select min(message_ms) from requeued)")})
select count(*)::int as n, case when count(*) > 0 then pg_notify('${WORK_CHANNEL}', '') end
from requeued`);

/**
 * Requeues in one set-based statement: a fresh attempt budget, the same message id,
 * recorded as requeued by whom and when. Each endpoint's rows are spaced out at the pace
 * its rate limit allows, so a requeue of thousands does not arrive as one burst.
 */
export async function requeueDeliveries(
  db: Queryable,
  target: RequeueTarget,
  by: string,
  defaultMaxAttempts: number,
): Promise<number> {
  const requeue = async ([idLo, idHi]: readonly [string, string]) => {
    const { rows } = await db.query(
      REQUEUE_SQL.query({
        deliveryId: target.deliveryId ?? null,
        idLo,
        idHi,
        endpointId: target.endpointId ?? null,
        since: target.since ?? null,
        appId: target.appId ?? null,
        includeFailed: target.includeFailed ?? false,
        by,
        defaultMaxAttempts,
      }),
    );
    return rows[0].n as number;
  };
  return target.deliveryId == null
    ? requeue(["0", "0"])
    : byDeliveryId(db, target.deliveryId, requeue, (n) => n > 0);
}

/** Cancels a delivery that has not been delivered yet (pending or waiting for a retry). */
export async function cancelDelivery(
  db: Queryable,
  deliveryId: number,
  appId: string | null,
): Promise<boolean> {
  return byDeliveryId(
    db,
    deliveryId,
    async ([lo, hi]) => {
      const { rowCount } = await db.query(
        `update deliveries set ${cancelSet}
         where id = $1::bigint and ${deliveryIdRangeSql("", "$3", "$4")}
           and status in ${CANCELABLE} and ($2::text is null or app_id = $2::text)`,
        [deliveryId, appId, lo, hi],
      );
      return rowCount === 1;
    },
    (done) => done,
  );
}

export interface RequeuePlanRow {
  endpointId: string;
  /** rows a requeue of the target would take from this endpoint */
  deliveries: number;
  /** the pace they go out at: the endpoint's strictest rate limit per second, null = none */
  perSecond: number | null;
}

/**
 * What a requeue of `target` would take, per endpoint, without changing anything: the
 * confirmation an operator sees, and the endpoints a big requeue walks one by one.
 */
export async function requeuePlan(db: Queryable, target: RequeueTarget): Promise<RequeuePlanRow[]> {
  const { rows } = await db.query(
    `select d.endpoint_id, count(*)::int as deliveries,
            least(${effectiveSql("e", "ratePerSecond")}::float8,
                  e.rate_per_minute / 60.0, e.rate_per_hour / 3600.0) as per_second
     from deliveries d join endpoints e on e.id = d.endpoint_id
     where (d.status = 'dead_letter' or ($4::boolean and d.status = 'failed'))
       and ($1::text is null or d.endpoint_id = $1::text)
       and ($2::timestamptz is null or d.updated_at >= $2::timestamptz)
       and ($3::text is null or d.app_id = $3::text)
     group by d.endpoint_id, e.rate_per_second, e.throttle_rate, e.rate_per_minute, e.rate_per_hour
     order by d.endpoint_id`,
    [
      target.endpointId ?? null,
      target.since ?? null,
      target.appId ?? null,
      target.includeFailed ?? false,
    ],
  );
  return rows.map((r) => ({
    endpointId: r.endpoint_id,
    deliveries: r.deliveries,
    perSecond: r.per_second === null ? null : Number(r.per_second),
  }));
}
