/**
 * The dashboard's endpoint table (docs/dashboard.md, "Pages"): every endpoint with its app,
 * state, circuit, latency figures, backlog and oldest pending, filtered, sorted and cut into
 * pages in PostgreSQL. The API's listing (GET /health/endpoints) pages in id order only;
 * an operator sorting 10,000 endpoints by p95 needs the order here.
 *
 * Backlog figures come from the partial index of queued rows (0007_hot_claims.sql) of the
 * periods that can hold them (db/queries/queue-bounds.ts): for a sort by backlog or oldest
 * pending they are aggregated once for all endpoints, otherwise only for the rows of the
 * page (a lateral join after the limit). Dead letters are counted for the page's rows.
 */
import type { Queryable } from "../../db/pool.ts";
import { deadLetterCounts, queuedBoundSql, queuedFromMs } from "../../db/queries/queue-bounds.ts";
import { waitingSinceSql } from "../../db/sql/delivery-states.ts";

/** Sortable columns: the expression each sorts by, and its column in the result. */
export const ENDPOINT_SORTS = {
  app: ["a.name", "app_name"],
  url: ["e.url", "url"],
  state: ["e.disabled", "disabled"],
  circuit: ["h.circuit_state", "circuit_state"],
  success: ["h.success_rate", "success_rate"],
  p50: ["h.p50_ms", "p50_ms"],
  p95: ["h.p95_ms", "p95_ms"],
  p99: ["h.p99_ms", "p99_ms"],
  samples: ["h.samples", "samples"],
  backlog: ["coalesce(q.pending, 0)", "pending"],
  oldest: ["q.oldest_pending_at", "oldest_pending_at"],
} as const;

export type EndpointSort = keyof typeof ENDPOINT_SORTS;

/** Filter values of the state filter: a circuit state, or the endpoint's own state. */
export const STATE_FILTERS = [
  "closed",
  "open",
  "half_open",
  "disabled",
  "paused",
  "enabled",
] as const;
export type StateFilter = (typeof STATE_FILTERS)[number];

export interface EndpointTableQuery {
  /** only this app (already scoped to the principal); null = every app */
  appId: string | null;
  state: StateFilter | null;
  slow: boolean;
  sort: EndpointSort;
  descending: boolean;
  limit: number;
  offset: number;
}

export interface EndpointTableRow {
  id: string;
  app_id: string;
  app_name: string;
  app_uid: string | null;
  url: string;
  description: string;
  disabled: boolean;
  paused_until: Date | null;
  circuit_state: "closed" | "open" | "half_open";
  success_rate: number | null;
  p50_ms: number | null;
  p95_ms: number | null;
  p99_ms: number | null;
  samples: number;
  slow: boolean;
  stats_at: Date | null;
  last_success_at: Date | null;
  last_failure_at: Date | null;
  pending: number;
  oldest_pending_at: Date | null;
  dead_letter: number;
}

const STATE_SQL: Record<StateFilter, string> = {
  closed: "h.circuit_state = 'closed'",
  open: "h.circuit_state = 'open'",
  half_open: "h.circuit_state = 'half_open'",
  disabled: "e.disabled",
  paused: "h.paused_until > now()",
  enabled: "not e.disabled",
};

const QUEUE_COLUMNS = `count(*) filter (where d.status in ('pending', 'failed'))::int as pending,
       min(${waitingSinceSql("d")}) as oldest_pending_at`;

/** One page of the table and the number of rows all pages hold. */
export async function endpointTable(
  db: Queryable,
  q: EndpointTableQuery,
): Promise<{ rows: EndpointTableRow[]; total: number }> {
  const where = [
    "($1::text is null or e.app_id = $1::text)",
    q.slow ? "h.slow" : "true",
    q.state ? STATE_SQL[q.state] : "true",
  ].join(" and ");
  const [expr, column] = ENDPOINT_SORTS[q.sort];
  const dir = q.descending ? "desc" : "asc";
  const order = `${expr} ${dir} nulls last, e.id`;
  const byQueue = q.sort === "backlog" || q.sort === "oldest";
  // values are parameters; the only text spliced in is from the constant tables above
  const text = byQueue
    ? `with q as (
         select d.endpoint_id, ${QUEUE_COLUMNS}
         from deliveries d where d.queued and ${queuedBoundSql("d", "$4")}
         group by d.endpoint_id
       )
       select e.id, e.app_id, a.name as app_name, a.uid as app_uid, e.url, e.description,
              e.disabled, h.paused_until, h.circuit_state, h.success_rate, h.p50_ms, h.p95_ms,
              h.p99_ms, h.samples, h.slow, h.stats_at, h.last_success_at, h.last_failure_at,
              coalesce(q.pending, 0) as pending, q.oldest_pending_at
       from endpoints e
       join applications a on a.id = e.app_id
       join endpoint_health h on h.endpoint_id = e.id
       left join q on q.endpoint_id = e.id
       where ${where}
       order by ${order}
       limit $2::int offset $3::int`
    : `with page as (
         select e.id, e.app_id, a.name as app_name, a.uid as app_uid, e.url, e.description,
                e.disabled, h.paused_until, h.circuit_state, h.success_rate, h.p50_ms, h.p95_ms,
                h.p99_ms, h.samples, h.slow, h.stats_at, h.last_success_at, h.last_failure_at
         from endpoints e
         join applications a on a.id = e.app_id
         join endpoint_health h on h.endpoint_id = e.id
         where ${where}
         order by ${order}
         limit $2::int offset $3::int
       )
       select page.*, q.pending, q.oldest_pending_at
       from page
       cross join lateral (
         select ${QUEUE_COLUMNS} from deliveries d
         where d.endpoint_id = page.id and d.queued and ${queuedBoundSql("d", "$4")}
       ) q
       order by page.${column} ${dir} nulls last, page.id`;
  const [page, count] = await Promise.all([
    db.query<Omit<EndpointTableRow, "dead_letter">>(text, [
      q.appId,
      q.limit,
      q.offset,
      await queuedFromMs(db),
    ]),
    db.query<{ n: number }>(
      `select count(*)::int as n from endpoints e join endpoint_health h on h.endpoint_id = e.id
       where ${where}`,
      [q.appId],
    ),
  ]);
  // every period's dead letters, for the page's rows only (queue-bounds.ts)
  const dead = await deadLetterCounts(
    db,
    page.rows.map((r) => r.id),
  );
  return {
    rows: page.rows.map((r) => ({ ...r, dead_letter: dead.get(r.id) ?? 0 })),
    total: count.rows[0]!.n,
  };
}
