-- An application's eventIds in a small table of their own (docs/history.md, "Messages and
-- deliveries"): one row per message that carries an eventId, naming it. A unique index on a
-- partitioned table must contain its partition key, so once messages are partitioned by
-- time, messages_app_id_event_id_key can no longer say "one message per (app, eventId)"
-- across partitions; this table, unpartitioned, says it instead. The enqueue statement
-- writes a message's row here before the message (src/queue/enqueue-message.ts), and a
-- message is written only when its row was; retention deletes a message's row with it.
--
-- Until messages are partitioned, messages_app_id_event_id_key stays too, as a second
-- guard: a message an older hookrelay wrote while this migration copied the existing
-- eventIds (below) has no row here, and the index still refuses its repeat.
create table message_event_ids (
  app_id text not null references applications (id) on delete cascade,
  event_id text not null,
  message_id text not null,
  created_at timestamptz not null default now(),
  primary key (app_id, event_id)
);

-- the eventId lookup across applications (the dashboard's message search)
create index message_event_ids_event_idx on message_event_ids (event_id);

-- The eventIds of the messages written so far: a read of messages' rows with an eventId,
-- which writers of messages do not wait for.
insert into message_event_ids (app_id, event_id, message_id, created_at)
select app_id, event_id, id, created_at from messages where event_id is not null
on conflict (app_id, event_id) do nothing;
