-- Background tasks (docs/recovery.md): Svix's recover and replay-missing, and hookrelay's
-- bulk replay, each a row that any worker process may run (src/ops/replay-runner.ts).
--
-- A task walks the messages of its app created in [since, until), in (created_at, id)
-- order, a small batch per short transaction; (cursor_at, cursor_id) is the last message
-- it has looked at, so a runner that stops or dies is followed by another from there.
-- The runner holds a task under a lease (lease_holder until lease_until), renewed by each
-- batch; a lapsed lease is free for any runner to take.
create table background_tasks (
  id text primary key,
  kind text not null check (kind in ('endpoint.recover', 'endpoint.replay', 'endpoint.bulk-replay')),
  app_id text not null references applications (id) on delete cascade,
  endpoint_id text not null references endpoints (id) on delete cascade,
  status text not null default 'running'
    check (status in ('running', 'finished', 'failed', 'canceled')),
  since timestamptz not null,
  until timestamptz not null check (until >= since),
  -- the bulk replay's filters (eventTypes, channel, tag, statuses, statusCodeClass)
  params jsonb not null default '{}',
  dry_run boolean not null default false,
  -- the pace, resolved when the task is made: the caller's, else the endpoint's rate limit,
  -- else HOOKRELAY_REPLAY_RATE_PER_SECOND
  rate_per_second double precision not null check (rate_per_second > 0),
  -- what matched when the runner first counted (a dry run's answer); null until then
  total bigint,
  done bigint not null default 0,
  cursor_at timestamptz not null,
  cursor_id text not null default '',
  lease_holder text,
  lease_until timestamptz,
  error text,
  created_by text,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  finished_at timestamptz
);

-- The runner's scan for a task to take, and the check for an overlapping running replay of
-- the same endpoint: both read only running tasks, a handful.
create index background_tasks_running_idx on background_tasks (endpoint_id) where status = 'running';
-- Listings: an app-scoped key's tasks, newest first (ids sort by creation time).
create index background_tasks_app_idx on background_tasks (app_id, id);

-- A task's walk: an app's messages in creation order from a cursor, a batch at a time, and
-- the counts of a dry run over a window. Without it each batch would read the app's
-- messages through messages_app_idx (app_id, id) and sort them; with it a batch reads its
-- next rows in order and stops (EXPLAIN on 1,000,000 messages of one app: an index scan
-- with a limit, docs/recovery.md). Built plainly, inside the migration's transaction: on
-- a large installation the migration blocks new messages while it builds.
create index messages_app_created_idx on messages (app_id, created_at, id);
