-- Endpoint health: circuit breaker, in-flight accounting, rate limits, latency samples.
--
-- The live, frequently written state of an endpoint lives in endpoint_health, apart from
-- its configuration in endpoints: workers update it on every batch, the API rarely touches
-- it, and keeping it narrow keeps those updates cheap (HOT, no index changes).

-- Per-endpoint policy overrides (null = the server default).
alter table endpoints
  add column failure_threshold integer,
  add column cooldown_ms integer,
  -- token buckets: at most this many requests per second / minute / hour (null = no limit)
  add column rate_per_second integer,
  add column rate_per_minute integer,
  add column rate_per_hour integer;

create table endpoint_health (
  endpoint_id text collate "C" primary key references endpoints (id) on delete cascade,
  -- closed | open | half_open (see src/health/circuit-breaker.ts)
  circuit_state text not null default 'closed'
    check (circuit_state in ('closed', 'open', 'half_open')),
  consecutive_failures integer not null default 0,
  -- the cooldown the next opening will use; doubles on every failed probe, reset on success
  cooldown_ms integer,
  opened_at timestamptz,
  -- open until then; afterwards one probe may be claimed
  open_until timestamptz,
  -- the single delivery sent as the half-open probe, and when that probe counts as lost
  probe_delivery_id bigint,
  probe_until timestamptz,
  -- rows this endpoint has in flight across all workers (claims add, results subtract)
  in_flight integer not null default 0,
  -- a 429/503 Retry-After pauses the whole endpoint until then
  paused_until timestamptz,
  -- token buckets (fractional tokens, refilled on use)
  tokens_second double precision,
  tokens_minute double precision,
  tokens_hour double precision,
  tokens_at timestamptz,
  last_success_at timestamptz,
  last_failure_at timestamptz,
  -- refreshed by the maintenance runner over the rolling latency window
  p50_ms integer,
  p95_ms integer,
  p99_ms integer,
  samples integer not null default 0,
  success_rate double precision,
  slow boolean not null default false,
  very_slow boolean not null default false,
  stats_at timestamptz
);

-- Every endpoint has exactly one health row, whoever inserts the endpoint.
create function hookrelay_endpoint_health_row() returns trigger language plpgsql as $$
begin
  insert into endpoint_health (endpoint_id) values (new.id);
  return new;
end
$$;

create trigger endpoints_health_row after insert on endpoints
  for each row execute function hookrelay_endpoint_health_row();

insert into endpoint_health (endpoint_id) select id from endpoints;

-- Every circuit transition, for the API and for post-mortems.
create table circuit_events (
  id bigint generated always as identity primary key,
  endpoint_id text collate "C" not null references endpoints (id) on delete cascade,
  at timestamptz not null default now(),
  from_state text not null,
  to_state text not null,
  reason text not null
);

create index circuit_events_endpoint_idx on circuit_events (endpoint_id, id);

-- Latency samples of the rolling window (24 h by default): one narrow row per attempt,
-- purged by time in small batches; the percentiles are computed from these.
create table latency_samples (
  endpoint_id text collate "C" not null,
  at timestamptz not null,
  latency_ms integer not null,
  ok boolean not null
);

-- Per-endpoint window scans for the percentiles.
create index latency_samples_endpoint_idx on latency_samples (endpoint_id, at);
-- The purge deletes the oldest rows; BRIN is tiny and fits append-only time order.
create index latency_samples_at_brin on latency_samples using brin (at);

-- Dead letters per endpoint (health counts, dead-letter listings), oldest first.
create index deliveries_dead_letter_idx on deliveries (endpoint_id, updated_at)
  where status = 'dead_letter';
