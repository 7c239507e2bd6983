-- Svix's message.expungeContent (README.md, Using the svix client; docs/delivery.md,
-- "Expunged messages"): when a message's payload was removed. The payload column then
-- holds '' (no message is accepted with an empty payload), which the API shows as
-- {"expired": true} and the sender refuses to send (delivery/http/prepare-request.ts).
-- Nullable with no default: PostgreSQL adds the column without rewriting the table.
alter table messages add column expunged_at timestamptz;
