-- Ed25519 signing keys (Standard Webhooks v1a, docs/delivery.md, Signing) beside HMAC ones.
-- `secret` keeps holding the sealed key (whsec_ or whsk_); `scheme` says which, without
-- opening it, so the current key of each scheme can be found and rotated on its own.
-- `public_key` is the whpk_ of an Ed25519 key: public, so stored as it is.
-- (Adding columns with constant defaults rewrites no rows.)
alter table endpoint_secrets
  add column scheme text not null default 'v1' check (scheme in ('v1', 'v1a')),
  add column public_key text,
  add constraint endpoint_secrets_public_key_check check ((scheme = 'v1a') = (public_key is not null));

-- Operational webhooks (docs/operational-webhooks.md): true once a message.attempt.failing or
-- .exhausted event was sent about this delivery, until a message.attempt.recovered one is.
-- Read by the claim, written by the result write; no index reads it, so the claim's rows
-- are still rewritten in place (migration 0007).
alter table deliveries add column failure_notified boolean not null default false;
