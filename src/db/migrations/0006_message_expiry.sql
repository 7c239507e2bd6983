-- A message's own payload retention (Svix's payloadRetentionPeriod / payloadRetentionHours):
-- the message, its payload and its finished deliveries go once this time has passed and
-- none of its deliveries is still due (src/ops/retention.ts). Null: the configured age only.
alter table messages add column expires_at timestamptz;

-- The purge finds expired messages through this; most messages have no expiry of their own.
create index messages_expires_idx on messages (expires_at) where expires_at is not null;
