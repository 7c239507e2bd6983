-- hookrelay schema, version 1.
--
-- Ids of user-visible resources are text with a type prefix (app_, ep_, msg_) followed by a
-- time-sortable suffix, so "order by id" is creation order and listings can page by id.
-- They are collate "C" (byte order): under a locale collation such as en_US, base62 ids
-- would not sort by creation time.
-- Queue rows (deliveries, attempts) use bigint identities: they are the hot path, and
-- unnest($1::bigint[]) batches are cheap.

create table applications (
  id text collate "C" primary key,
  uid text unique,
  name text not null,
  rate_limit integer,
  metadata jsonb not null default '{}',
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);

create table endpoints (
  id text collate "C" primary key,
  app_id text collate "C" not null references applications (id) on delete cascade,
  uid text,
  url text not null,
  description text not null default '',
  -- null = every event type / every channel
  event_types text[],
  channels text[],
  disabled boolean not null default false,
  -- why it is disabled: 'operator' (API/CLI) or 'gone' (the receiver answered 410)
  disabled_reason text,
  metadata jsonb not null default '{}',
  headers jsonb not null default '{}',
  throttle_rate integer,
  -- delivery policy overrides; null = the server-wide default
  timeout_ms integer,
  max_attempts integer,
  retry_base_ms integer,
  retry_cap_ms integer,
  max_in_flight integer,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique (app_id, uid)
);

-- Listing endpoints of an app in id order.
create index endpoints_app_idx on endpoints (app_id, id);

-- Signing secrets. The row with expires_at null is the current secret; a rotation sets
-- expires_at on the old one (now + grace) so it keeps signing beside the new one until then.
create table endpoint_secrets (
  id bigint generated always as identity primary key,
  endpoint_id text collate "C" not null references endpoints (id) on delete cascade,
  secret text not null,
  created_at timestamptz not null default now(),
  expires_at timestamptz
);

create index endpoint_secrets_endpoint_idx on endpoint_secrets (endpoint_id);

create table messages (
  id text collate "C" primary key,
  app_id text collate "C" not null references applications (id) on delete cascade,
  event_type text not null,
  -- the producer's own id for idempotent creation: unique per app
  event_id text,
  -- The payload's JSON text exactly as the producer sent it. Not jsonb: jsonb reorders
  -- keys and reformats numbers, and the signature covers these exact bytes.
  payload text not null,
  channels text[],
  tags text[],
  created_at timestamptz not null default now(),
  unique (app_id, event_id)
);

-- Listing an app's messages newest first (ids sort by creation time).
create index messages_app_idx on messages (app_id, id);

-- The queue: one row per (message, endpoint).
--
-- next_attempt_at is the time the row is next due. For pending and failed rows that is the
-- scheduled attempt; for in_flight rows it is the lease expiry, so a crashed worker's rows
-- become due again by the same rule and the claim needs a single index.
create table deliveries (
  id bigint generated always as identity primary key,
  message_id text collate "C" not null references messages (id) on delete cascade,
  endpoint_id text collate "C" not null references endpoints (id) on delete cascade,
  app_id text collate "C" not null,
  status text not null default 'pending'
    check (status in ('pending', 'in_flight', 'delivered', 'failed', 'dead_letter', 'canceled')),
  attempt_count integer not null default 0,
  max_attempts integer not null,
  next_attempt_at timestamptz not null default now(),
  lease_expires_at timestamptz,
  -- set by each claim; a result carrying another token is stale and ignored
  claim_token uuid,
  claimed_by text,
  -- 'scheduled' (normal fan-out) or 'manual' (resend/requeue)
  trigger text not null default 'scheduled',
  delivered_at timestamptz,
  last_attempt_at timestamptz,
  last_error_kind text,
  last_error text,
  last_status_code integer,
  last_response_ms integer,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique (message_id, endpoint_id)
);

-- The claim walks endpoints and, per endpoint, takes its due rows oldest first. Partial:
-- finished rows (the vast majority over time) are not in it, so its size follows the
-- backlog, not the history.
create index deliveries_due_idx on deliveries (endpoint_id, next_attempt_at)
  where status in ('pending', 'failed', 'in_flight');

-- "messages sent to this endpoint", newest first (the unique index leads with message_id).
create index deliveries_endpoint_message_idx on deliveries (endpoint_id, message_id);

-- Counting each endpoint's in-flight rows (per-endpoint concurrency limit) reads only these.
create index deliveries_in_flight_idx on deliveries (endpoint_id)
  where status = 'in_flight';

-- One row per HTTP attempt. Written in batches on the hot path, so it carries no foreign
-- keys (a per-row trigger each) and only the indexes its listings need; deleting an
-- endpoint or app deletes its attempts explicitly, and retention purges by age.
create table attempts (
  id bigint generated always as identity primary key,
  delivery_id bigint not null,
  message_id text collate "C" not null,
  endpoint_id text collate "C" not null,
  app_id text collate "C" not null,
  attempt_number integer not null,
  trigger text not null,
  url text not null,
  started_at timestamptz not null,
  -- measured with a monotonic clock, from just before the request until the body was read
  latency_ms integer not null,
  outcome text not null check (outcome in ('success', 'failure')),
  status_code integer,
  error_kind text,
  error text,
  -- the first 1 KiB of the response body
  response_body text,
  created_at timestamptz not null default now()
);

-- "attempts of this message", "attempts to this endpoint", newest first.
create index attempts_message_idx on attempts (message_id, id);
create index attempts_endpoint_idx on attempts (endpoint_id, id);

create table api_keys (
  id text collate "C" primary key,
  name text not null default '',
  -- sha256 hex of the whole key; the key itself is shown once and never stored
  key_hash text not null unique,
  role text not null check (role in ('admin', 'app')),
  app_id text collate "C" references applications (id) on delete cascade,
  created_at timestamptz not null default now(),
  revoked_at timestamptz,
  check ((role = 'app') = (app_id is not null))
);

-- Responses to POSTs carrying an idempotency-key, replayed for 24 hours.
create table idempotency_keys (
  principal text not null,
  key text not null,
  request_hash text not null,
  -- null while the first request is still being handled
  status_code integer,
  response_body text,
  created_at timestamptz not null default now(),
  primary key (principal, key)
);

create index idempotency_keys_created_idx on idempotency_keys (created_at);
