-- Liveness and the maintenance lock without a session of their own (docs/database.md,
-- "Connection poolers"). Through a transaction pooler a session advisory lock lives on a
-- server connection the pooler shares, so a worker reached only through one proves it is
-- alive by a heartbeat row instead: it sets beat_at to the database's now() every couple
-- of seconds, and the hand-back (src/queue/release-deliveries.ts) takes an owner whose row
-- is older than the heartbeat threshold as gone. A worker with a direct connection writes
-- no row and keeps its advisory lock (docs/worker-liveness.md); the hand-back reads the
-- row when there is one and tries the lock when there is none, so both kinds can share a
-- database.
create table worker_heartbeats (
  worker_lock integer primary key,
  worker_id text not null,
  beat_at timestamptz not null
);

-- The maintenance runner's lock as a lease (src/ops/maintenance-lease.ts): one row, whose
-- holder runs the tasks until expires_at and renews it while it does.
create table maintenance_lease (
  singleton boolean primary key default true check (singleton),
  holder text not null,
  expires_at timestamptz not null
);
