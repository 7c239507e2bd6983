-- Adaptive concurrency (docs/adaptive-concurrency.md): each endpoint's in-flight limit
-- moves with its answers, within its maxInFlight. It generalises 0021's resume_room (the
-- room of an endpoint resuming after a pause): the same column now holds the limit at all
-- times, and a pause is one of the rules that move it (back to 1, then doubling).
--
-- endpoint_health.concurrency_limit: the in-flight limit the claim applies below
--   maxInFlight; fractional, since it grows by one per round trip in small steps (the
--   claim takes its floor). Null: nothing learned yet (an adaptive endpoint starts at 1, one
--   that is not adaptive at maxInFlight).
-- endpoint_health.concurrency_reason: why it last moved (the words below); null: never.
-- endpoint_health.concurrency_since: when it last moved for a reason other than the one it
--   had, or was cut; the answers of requests started before it are not read again.
-- endpoint_health.latency_floor_ms: the lowest latency of a delivered answer seen, reset to
--   what one request at a time takes; the limit is cut when answers grow slower than it
--   by the tolerance.
alter table endpoint_health rename column resume_room to concurrency_limit;
alter table endpoint_health alter column concurrency_limit type double precision;
alter table endpoint_health
  add column concurrency_reason text
    constraint endpoint_health_concurrency_reason_check check (concurrency_reason in (
      'starting', 'growing', 'at_max', 'resuming', 'latency_rising', 'rate_limited', 'timeouts')),
  add column concurrency_since timestamptz,
  add column latency_floor_ms double precision;
-- an endpoint resuming from a pause when this migration runs goes on resuming
update endpoint_health set concurrency_reason = 'resuming', concurrency_since = now()
where concurrency_limit is not null;

-- endpoints.adaptive_concurrency: 'on' or 'off'; null: the process default
-- (HOOKRELAY_ADAPTIVE_CONCURRENCY, on unless set). Off: only maxInFlight and the gradual
-- resume after a pause limit the endpoint's requests in flight.
alter table endpoints
  add column adaptive_concurrency text
    constraint endpoints_adaptive_concurrency_check check (adaptive_concurrency in ('on', 'off'));
