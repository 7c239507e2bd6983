-- The operator dashboard (docs/dashboard.md): browser sessions, and the chart rollup.

-- A signed-in browser. The cookie holds a random token; only its SHA-256 is stored, so a
-- copy of this table opens no session. A session is worth no more than the key it was
-- opened with: key_hash names that key, and a session whose key is revoked (or, for the
-- HOOKRELAY_ADMIN_KEY, no longer configured) is refused at its next request.
create table dashboard_sessions (
  token_hash text collate "C" primary key,
  key_hash text not null,
  key_id text not null,
  role text not null check (role in ('admin', 'app')),
  app_id text collate "C" references applications (id) on delete cascade,
  created_at timestamptz not null default now(),
  expires_at timestamptz not null,
  check ((role = 'app') = (app_id is not null))
);

-- The purge of expired sessions.
create index dashboard_sessions_expires_idx on dashboard_sessions (expires_at);

-- Chart rollup, kept by the maintenance runner from the attempts (src/ops/chart-rollup.ts):
-- one row per scope and bucket, in two spans: 1-minute buckets (span 1) and 5-minute ones
-- (span 5, what a chart of 5-minute multiples reads: 288 rows a day). A scope is 'all',
-- 'app:<app id>' or 'ep:<endpoint id>', so a chart of one endpoint, one app or everything
-- reads a bounded number of rows whatever the traffic. Attempts after the rollup's mark
-- are read from the attempts themselves.
create table chart_counts (
  scope text collate "C" not null,
  span smallint not null check (span in (1, 5)),
  bucket timestamptz not null,
  success integer not null,
  failure integer not null,
  -- attempts by status class; "error" = no HTTP response (connect, DNS, timeout, guard)
  s2xx integer not null,
  s3xx integer not null,
  s4xx integer not null,
  s5xx integer not null,
  error integer not null,
  latency_sum_ms bigint not null,
  primary key (scope, span, bucket)
);

-- Latency histogram of the same rows: attempts per (scope, span, bucket, bin), only the
-- bins that occur. Bin 0 holds 0 ms; bin k >= 1 holds [1.1^(k-1), 1.1^k) ms, so a percentile
-- read from the bins is within 5% of the exact one.
create table chart_latency (
  scope text collate "C" not null,
  span smallint not null check (span in (1, 5)),
  bucket timestamptz not null,
  bin smallint not null,
  n integer not null,
  primary key (scope, span, bucket, bin)
);

-- How far the rollup has gone: attempts created before `rolled_until` are in the tables
-- above, later ones are not.
create table chart_rollup_state (
  id boolean primary key default true check (id),
  rolled_until timestamptz not null
);

-- A new mark starts a day back, so the first runs fill the charts' 24 h from history.
insert into chart_rollup_state (rolled_until) values (date_trunc('minute', now() - interval '24 hours'));

-- Message lookup by the producer's eventId across apps (an admin does not know the app);
-- the unique (app_id, event_id) index cannot answer without the app. Partial: messages
-- without an eventId cost nothing here.
create index messages_event_id_idx on messages (event_id) where event_id is not null;
