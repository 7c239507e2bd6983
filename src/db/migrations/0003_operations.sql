-- Operations: requeue bookkeeping, alert state, retention support.

-- Who requeued a delivery and when (dead-letter requeue, operator resend).
alter table deliveries
  add column requeued_at timestamptz,
  add column requeued_by text;

-- Alerts as the maintenance runner last saw them: one open row per (kind, subject) until
-- the condition clears; resolved rows stay for the record. New and resolved alerts are
-- what gets posted to the operator URL.
create table alerts (
  id bigint generated always as identity primary key,
  kind text not null,
  subject_type text not null,
  subject_id text collate "C" not null,
  app_id text collate "C",
  severity text not null check (severity in ('warning', 'critical')),
  message text not null,
  since timestamptz not null default now(),
  resolved_at timestamptz
);

create unique index alerts_open_idx on alerts (kind, subject_id) where resolved_at is null;

-- Retention deletes by age; rows arrive in time order, so BRIN indexes are tiny and cheap
-- to keep up to date on these insert-heavy tables.
create index attempts_created_brin on attempts using brin (created_at);
create index messages_created_brin on messages using brin (created_at);
