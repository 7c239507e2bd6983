-- hookrelay:no-transaction
--
-- Before messages and deliveries become partitioned by message_ms (0036, docs/history.md,
-- "Messages and deliveries"): the column on both, 0 for every row so far (a constant
-- default: a catalog change, no row is written), and a checked constraint that every row
-- holds 0, so that 0036 attaches both tables as the partitions of message_ms below 1
-- without scanning them under a lock. Outside a transaction: VALIDATE reads every row
-- under SHARE UPDATE EXCLUSIVE, while inserts, updates and reads go on; rows written
-- meanwhile by this hookrelay's predecessor (which knows nothing of the column) get 0.
-- Every step is safe to run again.
alter table messages add column if not exists message_ms bigint not null default 0;
alter table deliveries add column if not exists message_ms bigint not null default 0;

do $$
begin
  if not exists (select from pg_constraint where conname = 'messages_legacy_range'
                 and conrelid = 'messages'::regclass) then
    alter table messages add constraint messages_legacy_range check (message_ms < 1) not valid;
  end if;
  if not exists (select from pg_constraint where conname = 'deliveries_legacy_range'
                 and conrelid = 'deliveries'::regclass) then
    alter table deliveries add constraint deliveries_legacy_range check (message_ms < 1) not valid;
  end if;
end
$$;

alter table messages validate constraint messages_legacy_range;
alter table deliveries validate constraint deliveries_legacy_range;

-- The eventIds messages got since 0033 copied them, from a predecessor still running
-- (after 0036, message_event_ids alone keeps an eventId to one message).
insert into message_event_ids (app_id, event_id, message_id, created_at)
select app_id, event_id, id, created_at from messages where event_id is not null
on conflict (app_id, event_id) do nothing;
