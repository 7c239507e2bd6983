/**
 * Adaptive concurrency (docs/adaptive-concurrency.md): each endpoint's in-flight limit,
 * endpoint_health.concurrency_limit, moved by the answers of every batch of results in the
 * statement that writes the batch (no statement of its own), and read by the claim, which
 * takes no more than its floor (and never more than maxInFlight or the rate limits allow).
 *
 *   move            when (the first that holds, for one endpoint in one batch)     limit
 *   resuming        a pause (429, 503 + Retry-After)                               1, then doubles
 *   rate_limited    a 429 without a pause, adaptive                                x 0.5
 *   timeouts        a timed-out request, adaptive                                  x 0.5
 *   latency_rising  delivered answers slower on average than the latency floor     x 0.5 .. 0.9
 *                   by the tolerance (2 x, and at least 250 ms more), adaptive, not a
 *                   broker; an answer's latency less the worker's own loop lateness
 *   growing         delivered answers while at least half the limit was in use     + 1 per round
 *                   (starting and resuming: + 1 per answer, doubling per round)    trip
 *   at_max          grown to maxInFlight                                           maxInFlight
 *
 * Only answers to requests started after the last move that changed the reason or cut the
 * limit (concurrency_since) are read: requests already in flight when the limit was cut
 * were sent under the old limit, and their news is old. An endpoint that is not adaptive
 * keeps only the pause and its gradual resume (0021's resume room): its limit is
 * maxInFlight otherwise. A new adaptive endpoint starts at 1 ("starting") and doubles; a
 * broker endpoint (RabbitMQ, NATS JetStream) starts at its maxInFlight and is not cut for
 * latency: a broker's confirms slow down as it batches more writes, which is how it keeps
 * up, not a sign of harm (docs/adaptive-concurrency.md, "Brokers").
 */
import { ADAPTIVE_RULE } from "../domain/adaptive-concurrency.ts";
import { ErrorKind } from "../domain/retry-policy.ts";

/** Whether the endpoints row `e` is a broker's (RabbitMQ, NATS JetStream), in SQL. */
const brokerSql = (e: string) => `(${e}.destination_kind <> 'http')`;

/**
 * Where an adaptive endpoint's limit starts (nothing learned yet), in SQL: a broker's at its
 * maxInFlight (`max`), any other at ADAPTIVE_RULE.initialLimit. `e`: the endpoints row.
 */
const initialLimitSql = (e: string, max: string) =>
  `case when ${brokerSql(e)} then ${max} else ${ADAPTIVE_RULE.initialLimit} end`;

/**
 * The in-flight limit the claim applies to health row `h` (an SQL integer expression),
 * within `max` (maxInFlight): when `adaptive` (an SQL boolean) holds, the floor of its
 * adaptive limit (1 with nothing learned yet); when not, maxInFlight, but while it resumes
 * after a pause. So switching adaptive concurrency off takes effect at the next claim.
 * `endpoints`: the alias of the endpoint's row (for its destination kind).
 */
export const claimLimitSql = (h: string, max: string, adaptive: string, endpoints = "e") =>
  `least(${max}, case
    when ${adaptive} then coalesce(floor(${h}.concurrency_limit)::int, ${initialLimitSql(endpoints, max)})
    when ${h}.concurrency_reason = 'resuming' then coalesce(floor(${h}.concurrency_limit)::int, ${max})
    else ${max} end)`;

/**
 * The CTEs that compute each endpoint's next limit, for the statement that writes a batch
 * (after outcomeTransitionsSql's `locked`): `conc`, one row per endpoint in `i`, with
 * new_limit, new_reason, new_since and new_floor. They read the batch's results `r`
 * (endpoint_id, started_at, latency_ms, worker_late_ms, outcome, error_kind), `i` (pause_ms, ok_count),
 * `locked` (the health rows) and the parameters $defaultMaxInFlight and
 * $defaultAdaptiveConcurrency.
 */
export const concurrencyStepSql = (maxSql: string, adaptiveSql: string) => `
-- The batch's answers per endpoint (not the attempts that never reached it: as
-- record-results.ts's latency samples); fresh: to requests started since the last move. One
-- pass over the batch, grouped: a lookup per endpoint read the whole batch once for each
-- endpoint in it, 7 ms of a 27 ms write of 256 results over 86 endpoints
-- (docs/performance.md, scenario 3's history).
-- The latency read is the receiver's share of each answer's: its latency less the time the
-- worker's own event loop was late while its request was out (worker_late_ms, from
-- worker/loop-lateness.ts): a worker too busy to read its answers makes every endpoint
-- look slow at once, which is no receiver's evidence.
conc_answers as (
  select r.endpoint_id,
         count(*) filter (where fr.fresh and r.outcome = 'success')::int as oks,
         min(fr.own_ms) filter (where fr.fresh and r.outcome = 'success')::float8 as min_ok_ms,
         avg(fr.own_ms) filter (where fr.fresh and r.outcome = 'success')::float8 as avg_ok_ms,
         count(*) filter (where fr.fresh and r.error_kind = '${ErrorKind.timeout}')::int as timeouts,
         count(*) filter (where fr.fresh and r.error_kind = '${ErrorKind.rateLimited}')::int as limited,
         max(r.started_at + r.latency_ms * interval '1 millisecond') as last_answer_at
  from r
  join locked h on h.endpoint_id = r.endpoint_id
  cross join lateral (
    select r.started_at >= coalesce(h.concurrency_since, '-infinity'::timestamptz) as fresh,
           greatest(0, r.latency_ms - coalesce(r.worker_late_ms, 0)) as own_ms
  ) fr
  where r.error_kind is null
     or r.error_kind not in ('${ErrorKind.missingField}', '${ErrorKind.expunged}',
                             '${ErrorKind.proxy}', '${ErrorKind.oauth}')
  group by r.endpoint_id
),
conc_in as (
  select h.endpoint_id, h.in_flight, h.concurrency_limit, h.concurrency_reason as reason,
         h.concurrency_since, h.latency_floor_ms as floor_ms, i.pause_ms, i.ok_count,
         ${maxSql} as max_limit, ${adaptiveSql} as adaptive, ${brokerSql("e")} as broker,
         f.oks, f.min_ok_ms, f.avg_ok_ms, f.timeouts, f.limited, f.last_answer_at
  from locked h
  join i on i.endpoint_id = h.endpoint_id
  join endpoints e on e.id = h.endpoint_id
  left join conc_answers a on a.endpoint_id = h.endpoint_id
  -- (an endpoint without answers in the batch: no oks, timeouts nor 429s)
  cross join lateral (
    select coalesce(a.oks, 0) as oks, a.min_ok_ms, a.avg_ok_ms, coalesce(a.timeouts, 0) as timeouts,
           coalesce(a.limited, 0) as limited, a.last_answer_at
  ) f
),
-- The steps below are materialized: each reads its step's columns several times, and
-- PostgreSQL would otherwise fold every step into the next one, copying each expression
-- into every place that reads it, steps deep, and evaluating each copy. Planning the result
-- write took 45-95 ms so on a loaded 2-core machine, 25 ms materialized and 13 ms without
-- these steps at all (docs/performance.md, scenario 3's history).
conc_state as materialized (
  select c.*,
         coalesce(c.concurrency_limit,
                  case when c.adaptive and not c.broker then ${ADAPTIVE_RULE.initialLimit}
                       else c.max_limit end) as cur,
         greatest(c.floor_ms * ${ADAPTIVE_RULE.latencyTolerance},
                  c.floor_ms + ${ADAPTIVE_RULE.latencySlackMs}) as slow_ms,
         coalesce(c.reason, 'starting') in ('starting', 'resuming') as slow_start
  from conc_in c
),
conc_move as materialized (
  select s.*,
         case
           when s.pause_ms is not null then 'pause'
           when not s.adaptive then
             case when s.reason is distinct from 'resuming' then 'off'
                  when s.ok_count > 0 then 'grow'
                  else 'hold' end
           when s.limited > 0 then 'rate_limited'
           when s.timeouts > 0 then 'timeouts'
           -- (a broker's confirms slow down as it batches more: not read as harm)
           when s.avg_ok_ms > s.slow_ms and not s.broker then 'latency_rising'
           when s.oks > 0 and s.in_flight * 2 >= s.cur and s.cur < s.max_limit then 'grow'
           when s.oks > 0 and s.cur >= s.max_limit then 'at_max'
           else 'hold'
         end as move
  from conc_state s
),
conc_next as materialized (
  select m.*,
         case m.move
           when 'pause' then 1
           when 'off' then null
           when 'rate_limited' then greatest(1, m.cur * ${ADAPTIVE_RULE.cut})
           when 'timeouts' then greatest(1, m.cur * ${ADAPTIVE_RULE.cut})
           when 'latency_rising' then greatest(1, m.cur * least(${ADAPTIVE_RULE.latencyCutMax},
             greatest(${ADAPTIVE_RULE.latencyCutMin}, m.slow_ms / m.avg_ok_ms)))
           -- slow start (starting, resuming): one more per answer; else one more per round trip
           when 'grow' then least(m.max_limit, m.cur + case
             when not m.adaptive then m.ok_count
             when m.slow_start then m.oks
             else m.oks / m.cur end)
           when 'at_max' then m.max_limit
           else m.concurrency_limit
         end as lim
  from conc_move m
),
conc as (
  select n.endpoint_id,
         -- off: null at maxInFlight, as 0021's resume room was once grown back
         case when not n.adaptive and n.lim >= n.max_limit then null else n.lim end as new_limit,
         n.new_reason,
         -- a slow-start step starts a new round too: the next step reads only answers to
         -- requests sent under the new limit (one doubling per round trip, as TCP's)
         case when n.move in ('pause', 'rate_limited', 'timeouts', 'latency_rising')
                   or (n.move = 'grow' and n.slow_start)
                   or n.new_reason is distinct from n.reason
              then coalesce(n.last_answer_at, n.concurrency_since)
              else n.concurrency_since end as new_since,
         -- at one request at a time the latency is the endpoint's own: the floor is reset to it
         case when n.min_ok_ms is null then n.floor_ms
              when n.floor_ms is null or n.cur <= 1 then n.min_ok_ms
              else least(n.floor_ms, n.min_ok_ms) end as new_floor
  from (
    select x.*,
           case x.move
             when 'pause' then 'resuming'
             when 'off' then 'at_max'
             when 'hold' then x.reason
             when 'grow' then case
               when x.lim >= x.max_limit then 'at_max'
               when x.adaptive and x.slow_start then coalesce(x.reason, 'starting')
               when not x.adaptive then 'resuming'
               else 'growing' end
             else x.move
           end as new_reason
    from conc_next x
  ) n
)`;

/** The SET items of the batch's health update, from `conc` (joined as `c`). */
export const concurrencySet = (c: string) =>
  `concurrency_limit = ${c}.new_limit,
      concurrency_reason = ${c}.new_reason,
      concurrency_since = ${c}.new_since,
      latency_floor_ms = ${c}.new_floor`;
