/**
 * Per-endpoint latency and success telemetry over the rolling window (24 h by default),
 * from latency_samples: p50/p95/p99 (nearest rank: the smallest sample with at least p of
 * the samples at or below it), sample count and success rate. The maintenance runner
 * refreshes the stored copy in endpoint_health (and the slow flags); the API computes a
 * single endpoint's figures on demand.
 */
import type { HealthConfig } from "../config.ts";
import { namedSql } from "../db/named-sql.ts";
import type { Pool, Queryable } from "../db/pool.ts";

export interface LatencyStats {
  p50Ms: number | null;
  p95Ms: number | null;
  p99Ms: number | null;
  samples: number;
  successRate: number | null;
}

const STATS_SELECT = `
  select endpoint_id,
         percentile_disc(array[0.5, 0.95, 0.99]) within group (order by latency_ms) as p,
         count(*)::int as samples,
         avg(case when ok then 1.0 else 0.0 end)::float8 as success_rate
  from latency_samples
  where at > now() - $windowMs::bigint * interval '1 millisecond'`;

const ONE_ENDPOINT_SQL = namedSql<{ windowMs: number; endpointId: string }>(
  `${STATS_SELECT} and endpoint_id = $endpointId::text group by endpoint_id`,
);
const EVERY_ENDPOINT_SQL = namedSql<{ windowMs: number }>(`${STATS_SELECT} group by endpoint_id`);
const SOME_ENDPOINTS_SQL = namedSql<{ windowMs: number; endpointIds: string[] }>(
  `${STATS_SELECT} and endpoint_id = any ($endpointIds::text[]) group by endpoint_id`,
);

function toStats(
  row: { p: number[] | null; samples: number; success_rate: number | null } | undefined,
): LatencyStats {
  return {
    p50Ms: row?.p?.[0] ?? null,
    p95Ms: row?.p?.[1] ?? null,
    p99Ms: row?.p?.[2] ?? null,
    samples: row?.samples ?? 0,
    successRate: row?.success_rate ?? null,
  };
}

/** One endpoint's figures, computed now. */
export async function endpointLatency(
  db: Queryable,
  endpointId: string,
  windowMs: number,
): Promise<LatencyStats> {
  const { rows } = await db.query(ONE_ENDPOINT_SQL.query({ windowMs, endpointId }));
  return toStats(rows[0]);
}

/** A listed endpoint's stored figures (endpoint_health), as the listings read them. */
export interface StoredFigures {
  id: string;
  p50_ms: number | null;
  p95_ms: number | null;
  p99_ms: number | null;
  samples: number;
  success_rate: number | null;
  /** when maintenance last stored them; null: never */
  stats_at: Date | null;
  last_success_at: Date | null;
  last_failure_at: Date | null;
}

/**
 * Whether an endpoint's stored figures predate its first answers in the window: they hold
 * no sample though it answered after they were stored (or none were stored yet). Its
 * first minute, until maintenance's next refresh (HOOKRELAY_STATS_INTERVAL_MS), and an
 * endpoint waking after a quiet day: a listing would show "no data" for an endpoint that
 * has answered.
 */
export function awaitsFirstFigures(row: StoredFigures): boolean {
  if (row.samples > 0) return false;
  const answered = Math.max(
    row.last_success_at?.getTime() ?? 0,
    row.last_failure_at?.getTime() ?? 0,
  );
  return answered > 0 && answered > (row.stats_at?.getTime() ?? 0);
}

/**
 * The rows of a listing, with the figures of those awaiting their first (awaitsFirstFigures)
 * computed now, in one statement for all of them; every other row keeps its stored copy
 * (its percentiles over a day of samples are not recomputed per page view).
 * docs/operations.md, "Latency and success figures".
 */
export async function withFirstFigures<T extends StoredFigures>(
  db: Queryable,
  rows: T[],
  windowMs: number,
): Promise<T[]> {
  const endpointIds = rows.filter(awaitsFirstFigures).map((r) => r.id);
  if (endpointIds.length === 0) return rows;
  const { rows: computed } = await db.query(SOME_ENDPOINTS_SQL.query({ windowMs, endpointIds }));
  const now = new Map(computed.map((c) => [c.endpoint_id as string, toStats(c)]));
  return rows.map((r) => {
    const stats = now.get(r.id);
    if (!stats) return r;
    return {
      ...r,
      p50_ms: stats.p50Ms,
      p95_ms: stats.p95Ms,
      p99_ms: stats.p99Ms,
      samples: stats.samples,
      success_rate: stats.successRate,
    };
  });
}

/** Slow: p95 above slowP95Ms with enough samples; very slow (lowered threshold): above verySlowP95Ms. */
export function slowness(
  stats: LatencyStats,
  health: HealthConfig,
): { slow: boolean; verySlow: boolean } {
  const enough = stats.samples >= health.minSamples && stats.p95Ms !== null;
  return {
    slow: enough && stats.p95Ms! > health.slowP95Ms,
    verySlow: enough && stats.p95Ms! > health.verySlowP95Ms,
  };
}

/** Recomputes every endpoint's stored figures and slow flags (maintenance). */
export async function refreshLatencyStats(pool: Pool, health: HealthConfig): Promise<number> {
  // The aggregation runs first, without locks; the update then locks rows in id order,
  // like every other writer of endpoint_health, so it cannot deadlock with the workers.
  const { rows } = await pool.query(EVERY_ENDPOINT_SQL.query({ windowMs: health.windowMs }));
  const ids: string[] = [];
  const values: LatencyStats[] = [];
  for (const row of rows) {
    ids.push(row.endpoint_id);
    values.push(toStats(row));
  }
  const flags = values.map((v) => slowness(v, health));
  const { rowCount } = await pool.query(
    `with s as (
       select * from unnest($1::text[], $2::integer[], $3::integer[], $4::integer[], $5::integer[],
                            $6::float8[], $7::boolean[], $8::boolean[])
         as s(endpoint_id, p50, p95, p99, samples, success_rate, slow, very_slow)
     ),
     locked as (
       select endpoint_id from endpoint_health order by endpoint_id for update
     )
     update endpoint_health h
     set p50_ms = s.p50, p95_ms = s.p95, p99_ms = s.p99, samples = coalesce(s.samples, 0),
         success_rate = s.success_rate, slow = coalesce(s.slow, false),
         very_slow = coalesce(s.very_slow, false), stats_at = now()
     from locked l left join s on s.endpoint_id = l.endpoint_id
     where h.endpoint_id = l.endpoint_id`,
    [
      ids,
      values.map((v) => v.p50Ms),
      values.map((v) => v.p95Ms),
      values.map((v) => v.p99Ms),
      values.map((v) => v.samples),
      values.map((v) => v.successRate),
      flags.map((f) => f.slow),
      flags.map((f) => f.verySlow),
    ],
  );
  return rowCount ?? 0;
}

/** Deletes samples older than the window, a few thousand at a time. */
export async function purgeLatencySamples(
  pool: Pool,
  windowMs: number,
  batch = 5_000,
): Promise<number> {
  let total = 0;
  for (;;) {
    const { rowCount } = await pool.query(
      `delete from latency_samples where ctid = any (array(
         select ctid from latency_samples
         where at < now() - $1::bigint * interval '1 millisecond'
         limit $2::integer))`,
      [windowMs, batch],
    );
    total += rowCount ?? 0;
    if ((rowCount ?? 0) < batch) return total;
  }
}
