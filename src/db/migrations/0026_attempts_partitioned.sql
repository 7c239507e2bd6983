-- Attempts partitioned by time (docs/history.md): a range partition per day (or hour) of
-- ids, which carry their time (0024). Retention drops whole partitions instead of deleting
-- rows (src/ops/retention.ts); the maintenance task creates them ahead of time
-- (src/ops/attempt-partitions.ts).
--
-- The table as it was becomes the partition of the ids below 2024-01-01's first id
-- (attempts_legacy: every row written before this migration), attached without a scan
-- thanks to 0025's checked constraint, its indexes taken over as the new table's. A
-- default partition takes any row no other partition covers (a partition not created yet,
-- or a clock that jumped), so a missing partition never fails an insert. Everything here
-- changes the catalog only: the pause is the wait for the lock on the old table (running
-- statements on it finish first), then milliseconds, whatever the table holds.
lock table attempts in access exclusive mode;

alter table attempts rename to attempts_legacy;
alter index attempts_pkey rename to attempts_legacy_pkey;
alter index attempts_message_idx rename to attempts_legacy_message_idx;
alter index attempts_endpoint_idx rename to attempts_legacy_endpoint_idx;
alter index attempts_created_brin rename to attempts_legacy_created_brin;
-- its sequence goes with it: new ids come from the time and attempts_id_seq below
alter table attempts_legacy alter column id drop identity;

-- The low 21 bits of a new id: ids written in the same second differ by this (2,097,152 a
-- second before two could meet).
create sequence attempts_id_seq as bigint;

-- (like: the same columns, types, collations and not-null rules as the old table)
create table attempts (like attempts_legacy including defaults) partition by range (id);
alter table attempts
  alter column id set default (hookrelay_attempt_id_at(now()) | (nextval('attempts_id_seq') & 2097151)),
  add constraint attempts_outcome_check check (outcome in ('success', 'failure')),
  add constraint attempts_pkey primary key (id);
alter sequence attempts_id_seq owned by attempts.id;

-- "attempts of this message", "attempts to this endpoint", newest first; retention of the
-- rows older than the layout (by created_at, BRIN).
create index attempts_message_idx on attempts (message_id, id);
create index attempts_endpoint_idx on attempts (endpoint_id, id);
create index attempts_created_brin on attempts using brin (created_at);

alter table attempts attach partition attempts_legacy for values from (minvalue) to (264724335820800);

create table attempts_default partition of attempts default;
-- Rows whose created_at is older than their id says (written with an explicit created_at:
-- an import, a test): retention deletes them by age (src/ops/retention.ts). Partial: rows
-- written by hookrelay have created_at = their id's time and never enter it. "Older" means
-- by more than an hour: 7549747200 is an hour of ids (3600 << 21), subtracted from the id
-- because an index predicate must be immutable and timestamptz - interval is not. Every
-- period partition gets the same index (src/ops/attempt-partitions.ts).
create index attempts_default_backdated_idx on attempts_default (created_at)
  where created_at < hookrelay_attempt_time(id - 7549747200);
