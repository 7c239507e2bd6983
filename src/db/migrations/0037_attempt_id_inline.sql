-- hookrelay_attempt_id_at (migration 0024) in a form PostgreSQL inlines. Its body read
-- extract(epoch from t) on a timestamptz, which PostgreSQL declares stable (other fields of a
-- timestamptz depend on the session's time zone), inside a function declared immutable: the
-- planner refuses to inline such a body, so every attempt row's id default
-- (hookrelay_attempt_id_at(now()) | ...) ran it through the SQL function executor, about 3% of
-- PostgreSQL's CPU per delivery (docs/performance.md, scenario 3's history). The epoch is the
-- same number read from an interval, t - 'epoch', where each step is immutable; the value is
-- unchanged for every t.
create or replace function hookrelay_attempt_id_at(t timestamptz) returns bigint
language sql immutable parallel safe strict as $$
  select (floor(extract(epoch from t - timestamptz 'epoch'))::bigint - 1577836800) << 21
$$;
