-- Attempt ids that carry their time (docs/history.md). From migration 0026 on, an attempt's
-- id is the second it was written (seconds since 2020-01-01 UTC) times 2^21, plus the low 21
-- bits of a sequence: ids still rise with time, stay below 2^53 (JavaScript numbers, and the
-- opaque public ids of migration 0014) until the year 2156, and the attempts table is
-- partitioned by ranges of them, so a lookup by id or a range of ids reads one partition,
-- and a time bound becomes an id bound that prunes the others.

-- The lowest id written at `t` (the id bound of "at or after t"). Immutable: the epoch of a
-- timestamptz does not depend on the session's time zone, and the planner folds a call with
-- a constant argument, so partitions are pruned when the statement is planned.
create function hookrelay_attempt_id_at(t timestamptz) returns bigint
language sql immutable parallel safe strict as $$
  select (floor(extract(epoch from t))::bigint - 1577836800) << 21
$$;

-- The second attempt id `id` was written in (its id's time); the inverse of the above.
create function hookrelay_attempt_time(id bigint) returns timestamptz
language sql immutable parallel safe strict as $$
  select to_timestamp((id >> 21) + 1577836800)
$$;
