/**
 * Time buckets for the charts (docs/dashboard.md, "Chart data"): attempts per bucket by
 * outcome and status class, and latency p50/p95/p99 per bucket, for one endpoint, one app
 * or everything, over the latency window (24 h).
 *
 * Set-based and bounded whatever the traffic: the maintenance runner rolls the attempts up
 * into 1-minute and 5-minute rows (chart_counts, and a latency histogram in chart_latency,
 * migration 0012) for three scopes at once, 'all', 'app:<id>' and 'ep:<id>', with one
 * GROUPING SETS statement per step. A chart of 5-minute multiples reads 288 rows a day of
 * its scope (others the 1-minute rows), plus the minutes after the rollup's mark straight
 * from the attempts, so it is current to the second. A 5-minute row may hold only the
 * minutes before the mark; the rest of it comes from the attempts. Percentiles come from the merged histogram: bin 0 is 0 ms, bin k >= 1 holds
 * [1.1^(k-1), 1.1^k) ms and is read as its geometric middle, so they are within 5%.
 */

import { namedSql } from "../db/named-sql.ts";
import type { Pool, Queryable } from "../db/pool.ts";
import { attemptsSinceSql } from "../db/sql/attempt-ids.ts";

/**
 * Attempts created this long ago may still be committing: the rollup stays behind. The
 * result writer's statements commit within milliseconds, but one can wait on a lock: an
 * attempt's `created_at` is its transaction's start (now()), so the mark also never passes
 * the start of the oldest transaction still open in this database (for 10 minutes at most:
 * a session left idle in a transaction must not stop the rollup). The minutes after the
 * mark are read from the attempts themselves, so holding it back costs time, never rows.
 */
const SETTLE_MS = 60_000;
const OPEN_TRANSACTION_HOLD = "10 minutes";
/** At most this much history per rollup statement (the first runs catch up a day). */
const STEP = "60 minutes";

/** The histogram bin of a latency in ms (see the module comment). */
const binOf = (ms: string) =>
  `(case when ${ms} < 1 then 0 else least(250, 1 + floor(ln(${ms}) / ln(1.1)))::int end)`;

const ROLLUP_SQL = namedSql<{ settleMs: number }>(`
with state as (
  select rolled_until as from_t from chart_rollup_state for update
),
open_since as (
  -- the oldest open transaction of another client (autovacuum and the like insert no attempts)
  select case when min(xact_start) is not null
              then greatest(min(xact_start), now() - interval '${OPEN_TRANSACTION_HOLD}') end as t
  from pg_stat_activity
  where datname = current_database() and pid <> pg_backend_pid()
    and backend_type = 'client backend' and xact_start is not null
),
bounds as (
  select from_t,
         -- least() skips a null (no open transaction)
         greatest(from_t, least(from_t + interval '${STEP}',
                                date_trunc('minute', now() - $settleMs::integer * interval '1 millisecond'),
                                date_trunc('minute', (select t from open_since)))) as to_t
  from state
),
src as materialized (
  select a.endpoint_id, a.app_id, a.created_at, a.outcome, a.status_code, a.latency_ms,
         ${binOf("a.latency_ms")} as bin
  from attempts a, bounds b
  where a.created_at >= b.from_t and a.created_at < b.to_t
    -- the same lower bound as an id bound, known before the scan starts, so only the
    -- partitions since the mark are read (docs/history.md)
    and ${attemptsSinceSql("a", "(select rolled_until from chart_rollup_state)")}
),
-- each attempt in its 1-minute and its 5-minute bucket
spans as (
  select s.*, w.span, date_bin(w.span * interval '1 minute', s.created_at, '2000-01-01') as bucket
  from src s cross join (values (1::smallint), (5::smallint)) w(span)
),
counted as (
  insert into chart_counts as c
    (scope, span, bucket, success, failure, s2xx, s3xx, s4xx, s5xx, error, latency_sum_ms)
  select case when grouping(endpoint_id) = 0 then 'ep:' || endpoint_id
              when grouping(app_id) = 0 then 'app:' || app_id
              else 'all' end,
         span, bucket,
         count(*) filter (where outcome = 'success'),
         count(*) filter (where outcome = 'failure'),
         count(*) filter (where status_code between 200 and 299),
         count(*) filter (where status_code between 300 and 399),
         count(*) filter (where status_code between 400 and 499),
         count(*) filter (where status_code >= 500),
         count(*) filter (where status_code is null or status_code < 200),
         sum(latency_ms)
  from spans
  group by grouping sets ((span, bucket), (app_id, span, bucket), (endpoint_id, span, bucket))
  -- a minute is rolled once (the mark moves by whole minutes), but a 5-minute bucket over
  -- several steps: adding makes it whole
  on conflict (scope, span, bucket) do update set
    success = c.success + excluded.success, failure = c.failure + excluded.failure,
    s2xx = c.s2xx + excluded.s2xx, s3xx = c.s3xx + excluded.s3xx, s4xx = c.s4xx + excluded.s4xx,
    s5xx = c.s5xx + excluded.s5xx, error = c.error + excluded.error,
    latency_sum_ms = c.latency_sum_ms + excluded.latency_sum_ms
  returning 1
),
binned as (
  insert into chart_latency as l (scope, span, bucket, bin, n)
  select case when grouping(endpoint_id) = 0 then 'ep:' || endpoint_id
              when grouping(app_id) = 0 then 'app:' || app_id
              else 'all' end,
         span, bucket, bin, count(*)
  from spans
  group by grouping sets ((span, bucket, bin), (app_id, span, bucket, bin),
                          (endpoint_id, span, bucket, bin))
  on conflict (scope, span, bucket, bin) do update set n = l.n + excluded.n
  returning 1
),
moved as (
  update chart_rollup_state set rolled_until = (select to_t from bounds) returning rolled_until
)
select (select count(*) from src)::int as attempts,
       (select count(*) from counted)::int + (select count(*) from binned)::int as rows,
       (select rolled_until from moved) < least(
         date_trunc('minute', now() - $settleMs::integer * interval '1 millisecond'),
         date_trunc('minute', (select t from open_since))) as behind`);

/**
 * Rolls settled attempts into the chart tables, a step at a time until caught up (at most
 * `maxSteps`); returns the attempts rolled. Old rollup rows (beyond `keepMs`) are deleted.
 */
export async function rollUpCharts(
  pool: Pool,
  options: {
    keepMs: number;
    maxSteps?: number;
    /** how far behind now the mark stays (default a minute; tests move it) */
    settleMs?: number;
  },
): Promise<number> {
  let total = 0;
  for (let step = 0; step < (options.maxSteps ?? 48); step++) {
    const { rows } = await pool.query(
      ROLLUP_SQL.query({ settleMs: options.settleMs ?? SETTLE_MS }),
    );
    total += rows[0].attempts;
    if (!rows[0].behind) break;
  }
  for (const table of ["chart_counts", "chart_latency"]) {
    await pool.query(
      `delete from ${table} where bucket < now() - $1::bigint * interval '1 millisecond'`,
      [options.keepMs],
    );
  }
  return total;
}

export interface ChartScope {
  endpointId: string | null;
  appId: string | null;
}

export interface ChartBucket {
  /** the bucket's start */
  t: Date;
  attempts: number;
  success: number;
  failure: number;
  s2xx: number;
  s3xx: number;
  s4xx: number;
  s5xx: number;
  /** attempts that got no HTTP response (connect, DNS, timeout, refused by the guard) */
  error: number;
  avgMs: number | null;
  p50Ms: number | null;
  p95Ms: number | null;
  p99Ms: number | null;
}

// The rollup's mark is read first and passed in: with its value in the statement the
// planner sees how recent the tail is (a BRIN range scan of the newest pages), and the
// statement is not a named prepared one, so each run is planned with its own values.
const BUCKETS_SQL = namedSql<{
  scope: string;
  endpointId: string | null;
  appId: string | null;
  since: Date;
  until: Date;
  mark: Date;
  span: number;
  bucketSeconds: number;
}>(`
with tail as (
  select date_bin($bucketSeconds::int * interval '1 second', a.created_at, $since::timestamptz) as t,
         a.outcome, a.status_code, a.latency_ms
  from attempts a
  where a.created_at >= greatest($since::timestamptz, $mark::timestamptz)
    and ${attemptsSinceSql("a", "greatest($since::timestamptz, $mark::timestamptz)")}
    and a.created_at < $until::timestamptz
    and ($endpointId::text is null or a.endpoint_id = $endpointId::text)
    and ($appId::text is null or a.app_id = $appId::text)
),
counts as (
  select t, sum(success) as success, sum(failure) as failure, sum(s2xx) as s2xx,
         sum(s3xx) as s3xx, sum(s4xx) as s4xx, sum(s5xx) as s5xx, sum(error) as error,
         sum(latency_sum_ms) as latency_sum_ms
  from (
    select date_bin($bucketSeconds::int * interval '1 second', c.bucket, $since::timestamptz) as t,
           c.success, c.failure, c.s2xx, c.s3xx, c.s4xx, c.s5xx, c.error, c.latency_sum_ms
    from chart_counts c
    where c.scope = $scope::text and c.span = $span::smallint and c.bucket >= $since::timestamptz
      and c.bucket < least($until::timestamptz, $mark::timestamptz)
    union all
    select t, count(*) filter (where outcome = 'success'), count(*) filter (where outcome = 'failure'),
           count(*) filter (where status_code between 200 and 299),
           count(*) filter (where status_code between 300 and 399),
           count(*) filter (where status_code between 400 and 499),
           count(*) filter (where status_code >= 500),
           count(*) filter (where status_code is null or status_code < 200),
           sum(latency_ms)
    from tail group by t
  ) u
  group by t
),
bins as (
  select t, bin, sum(n) as n
  from (
    select date_bin($bucketSeconds::int * interval '1 second', l.bucket, $since::timestamptz) as t,
           l.bin::int as bin, l.n::bigint as n
    from chart_latency l
    where l.scope = $scope::text and l.span = $span::smallint and l.bucket >= $since::timestamptz
      and l.bucket < least($until::timestamptz, $mark::timestamptz)
    union all
    select t, ${binOf("latency_ms")}, count(*) from tail group by 1, 2
  ) u
  group by t, bin
),
running as (
  select t, bin, sum(n) over (partition by t order by bin) as run, sum(n) over (partition by t) as total
  from bins
),
pct as (
  select t, min(bin) filter (where run >= 0.50 * total) as p50,
            min(bin) filter (where run >= 0.95 * total) as p95,
            min(bin) filter (where run >= 0.99 * total) as p99
  from running group by t
)
select g.t,
       coalesce(c.success, 0)::int as success, coalesce(c.failure, 0)::int as failure,
       coalesce(c.s2xx, 0)::int as s2xx, coalesce(c.s3xx, 0)::int as s3xx,
       coalesce(c.s4xx, 0)::int as s4xx, coalesce(c.s5xx, 0)::int as s5xx,
       coalesce(c.error, 0)::int as error,
       (c.latency_sum_ms / nullif(c.success + c.failure, 0))::float8 as avg_ms,
       p.p50, p.p95, p.p99
from generate_series($since::timestamptz, $until::timestamptz - interval '1 microsecond',
                     $bucketSeconds::int * interval '1 second') g(t)
left join counts c on c.t = g.t
left join pct p on p.t = g.t
order by g.t`);

/** A bin's latency in ms: 0 for bin 0, else the geometric middle of its range. */
const binMs = (bin: number | null): number | null =>
  bin === null ? null : bin === 0 ? 0 : Math.round(1.1 ** (bin - 0.5) * 10) / 10;

/**
 * The buckets of `scope` from `since` (aligned by the caller to whole minutes, or to the
 * bucket) to `until`, each `bucketSeconds` long; empty buckets are listed too (zero
 * counts, null latency).
 */
export async function chartBuckets(
  db: Queryable,
  scope: ChartScope,
  range: { since: Date; until: Date; bucketSeconds: number },
): Promise<ChartBucket[]> {
  const key = scope.endpointId
    ? `ep:${scope.endpointId}`
    : scope.appId
      ? `app:${scope.appId}`
      : "all";
  const mark = await db.query<{ rolled_until: Date }>(
    "select rolled_until from chart_rollup_state",
  );
  const { rows } = await db.query(
    BUCKETS_SQL.query({
      scope: key,
      endpointId: scope.endpointId,
      appId: scope.endpointId ? null : scope.appId,
      mark: mark.rows[0]?.rolled_until ?? range.since,
      // 5-minute rows when the buckets are made of them (since is aligned to the bucket)
      span: range.bucketSeconds % 300 === 0 && range.since.getTime() % 300_000 === 0 ? 5 : 1,
      ...range,
    }),
  );
  return rows.map((r) => ({
    t: r.t,
    attempts: r.success + r.failure,
    success: r.success,
    failure: r.failure,
    s2xx: r.s2xx,
    s3xx: r.s3xx,
    s4xx: r.s4xx,
    s5xx: r.s5xx,
    error: r.error,
    avgMs: r.avg_ms === null ? null : Math.round(r.avg_ms * 10) / 10,
    p50Ms: binMs(r.p50),
    p95Ms: binMs(r.p95),
    p99Ms: binMs(r.p99),
  }));
}
