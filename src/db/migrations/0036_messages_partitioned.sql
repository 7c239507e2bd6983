-- Messages and deliveries partitioned by message_ms (docs/history.md, "Messages and
-- deliveries"): the millisecond a message's id carries (hookrelay_message_ms, 0034), a
-- delivery's its message's, so that a message and its deliveries share a period and go
-- together. A range partition per day (or hour), to be created ahead of time by the
-- maintenance task (not built yet: until then every new row is the default partition's);
-- a default partition for rows no period covers (a period not created yet, a clock that
-- jumped, and the rows retention keeps past their period).
--
-- The tables as they were become the partitions of message_ms below 1 (messages_legacy,
-- deliveries_legacy: every row written before this migration, and any written without the
-- column), attached without a scan thanks to 0035's checked constraints, their indexes
-- taken over as the new tables'. Catalog changes only: the pause is the wait for the
-- locks on both tables (statements under way on them finish first), then milliseconds.
--
-- What a partitioned table cannot have: a primary key or unique index without the
-- partition key. Each partition has its own unique indexes on id (and deliveries' on
-- (message_id, endpoint_id), global since a message's deliveries share its partition);
-- one message per (app, eventId) is message_event_ids' (0033); and no foreign key refers
-- to messages any more (detaching a referenced partition scans the referencing table):
-- retention deletes a message's deliveries with it (src/ops/retention.ts).
lock table messages, deliveries in access exclusive mode;

alter table deliveries drop constraint deliveries_message_id_fkey;

-- messages
alter table messages rename to messages_legacy;
alter index messages_pkey rename to messages_legacy_pkey;
alter index messages_app_id_event_id_key rename to messages_legacy_app_id_event_id_key;
alter index messages_app_created_idx rename to messages_legacy_app_created_idx;
alter index messages_app_idx rename to messages_legacy_app_idx;
alter index messages_created_brin rename to messages_legacy_created_brin;
alter index messages_event_id_idx rename to messages_legacy_event_id_idx;
alter index messages_expires_idx rename to messages_legacy_expires_idx;

create table messages (like messages_legacy including defaults) partition by range (message_ms);
alter table messages
  add constraint messages_app_id_fkey foreign key (app_id) references applications (id) on delete cascade;
create index messages_app_created_idx on messages (app_id, created_at, id);
create index messages_app_idx on messages (app_id, id);
create index messages_created_brin on messages using brin (created_at);
create index messages_event_id_idx on messages (event_id) where event_id is not null;
create index messages_expires_idx on messages (expires_at) where expires_at is not null;

alter table messages attach partition messages_legacy for values from (minvalue) to (1);
create table messages_default partition of messages default;
create unique index messages_default_id_key on messages_default (id);

-- deliveries: ids from a sequence of their own, going on from the old identity's
alter table deliveries rename to deliveries_legacy;
alter index deliveries_pkey rename to deliveries_legacy_pkey;
alter index deliveries_message_id_endpoint_id_key rename to deliveries_legacy_message_id_endpoint_id_key;
alter index deliveries_dead_letter_app_idx rename to deliveries_legacy_dead_letter_app_idx;
alter index deliveries_dead_letter_endpoint_idx rename to deliveries_legacy_dead_letter_endpoint_idx;
alter index deliveries_dead_letter_order_idx rename to deliveries_legacy_dead_letter_order_idx;
alter index deliveries_due_idx rename to deliveries_legacy_due_idx;
alter index deliveries_endpoint_message_idx rename to deliveries_legacy_endpoint_message_idx;
alter index deliveries_ordered_dead_idx rename to deliveries_legacy_ordered_dead_idx;
alter index deliveries_ordered_queued_idx rename to deliveries_legacy_ordered_queued_idx;
alter index deliveries_unordered_due_idx rename to deliveries_legacy_unordered_due_idx;

-- (from the old sequence's position, not max(id): a number handed out once, even if its row
-- is gone, is never handed out again; public ids rely on it, migration 0014)
create sequence delivery_ids as bigint;
do $$
declare
  last bigint;
begin
  execute format('select case when is_called then last_value else last_value - 1 end from %s',
                 pg_get_serial_sequence('deliveries_legacy', 'id')) into last;
  perform setval('delivery_ids',
                 greatest(last, coalesce((select max(id) from deliveries_legacy), 0)) + 1, false);
end
$$;
alter table deliveries_legacy alter column id drop identity;

create table deliveries (like deliveries_legacy including defaults including generated)
  partition by range (message_ms);
alter table deliveries
  alter column id set default nextval('delivery_ids'),
  add constraint deliveries_status_check
    check (status in ('pending', 'in_flight', 'delivered', 'failed', 'dead_letter', 'canceled')),
  add constraint deliveries_endpoint_id_fkey
    foreign key (endpoint_id) references endpoints (id) on delete cascade;
alter sequence delivery_ids owned by deliveries.id;
create index deliveries_dead_letter_app_idx on deliveries (app_id, updated_at, id) where dead_lettered;
create index deliveries_dead_letter_endpoint_idx on deliveries (endpoint_id, updated_at, id) where dead_lettered;
create index deliveries_dead_letter_order_idx on deliveries (updated_at, id) where dead_lettered;
create index deliveries_due_idx on deliveries (endpoint_id, next_attempt_at)
  with (deduplicate_items = off) where queued;
create index deliveries_endpoint_message_idx on deliveries (endpoint_id, message_id);
create index deliveries_ordered_dead_idx on deliveries (endpoint_id, ordering_key, id)
  where dead_lettered and ordering_key is not null;
create index deliveries_ordered_queued_idx on deliveries (endpoint_id, ordering_key, id)
  where queued and ordering_key is not null;
create index deliveries_unordered_due_idx on deliveries (endpoint_id, next_attempt_at)
  with (deduplicate_items = off) where queued and ordering_key is null;

alter table deliveries attach partition deliveries_legacy for values from (minvalue) to (1);
create table deliveries_default partition of deliveries default;
create unique index deliveries_default_id_key on deliveries_default (id);
create unique index deliveries_default_message_id_endpoint_id_key
  on deliveries_default (message_id, endpoint_id);
