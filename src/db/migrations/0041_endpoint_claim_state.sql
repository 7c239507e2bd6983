-- The claim's side of an endpoint's live state, apart from endpoint_health (issues 29, 30;
-- docs/delivery.md, "Claims and result writes lock different rows").
--
-- Until now every claim locked the health rows of every endpoint it might take from (the
-- in-flight count, the token buckets, the probe) and every result write locked those of
-- its results' endpoints (the in-flight release, the failure count, the circuit, the
-- adaptive limit), each to its commit: claims and result writes took turns on the same
-- rows, and a claim or a write was running during 0.90-0.99 of a broker delivery's span
-- (docs/performance.md). Now:
--
-- endpoint_claim_state, one row per endpoint, is the claim's: `claimed` counts the rows
--   ever claimed from the endpoint (claims add to it) and the token buckets are spent
--   from it. Claims lock it (in endpoint id order), so the count and the buckets they read
--   are exact across workers.
-- endpoint_health.released counts the rows whose result was written or that were handed
--   back (result writes and hand-backs add to it, with the health row locked, as before).
--
-- An endpoint's rows in flight are claimed - released. A claim reads `released` without
-- waiting for the write that holds it: a stale read only counts a row in flight that is
-- not any more, so the claim takes less than the room, never more. Both counts only grow.
--
-- A worker of an earlier version still running after this migration (a rolling upgrade)
-- fails its claims and result writes (the columns it reads are gone) and claims nothing
-- until it is replaced: its rows come back by their leases. Keeping the old columns would
-- let it claim without adding to `claimed`, past the endpoints' limits.
create table endpoint_claim_state (
  endpoint_id text collate "C" primary key references endpoints (id) on delete cascade,
  claimed bigint not null default 0,
  -- token buckets (fractional tokens, refilled on use), moved from endpoint_health
  tokens_second double precision,
  tokens_minute double precision,
  tokens_hour double precision,
  tokens_at timestamptz
);

alter table endpoint_health add column released bigint not null default 0;

insert into endpoint_claim_state (endpoint_id, claimed, tokens_second, tokens_minute,
                                  tokens_hour, tokens_at)
select endpoint_id, greatest(in_flight, 0), tokens_second, tokens_minute, tokens_hour, tokens_at
from endpoint_health;

alter table endpoint_health
  drop column in_flight,
  drop column tokens_second,
  drop column tokens_minute,
  drop column tokens_hour,
  drop column tokens_at;

-- Every endpoint has exactly one row of each, whoever inserts the endpoint.
create or replace function hookrelay_endpoint_health_row() returns trigger language plpgsql as $$
begin
  insert into endpoint_health (endpoint_id) values (new.id);
  insert into endpoint_claim_state (endpoint_id) values (new.id);
  return new;
end
$$;
