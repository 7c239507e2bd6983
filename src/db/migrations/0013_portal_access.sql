-- The tenant portal (docs/portal.md): app-scoped access links and the browser sessions
-- opened with them. Both store only SHA-256 hashes of their secrets; the secret itself is
-- shown once (the link) or lives only in the browser's cookie (the session).
create table portal_tokens (
  id text collate "C" primary key,
  app_id text not null references applications (id) on delete cascade,
  token_hash text not null unique,
  -- Svix's AppPortalCapability names this link grants (ViewBase is always among them)
  capabilities text[] not null,
  -- Svix's optional sessionId: a label the caller may use to expire some links together
  session_label text,
  created_at timestamptz not null default now(),
  expires_at timestamptz not null,
  revoked_at timestamptz
);
-- expire-all and the listing read an app's links
create index portal_tokens_app_idx on portal_tokens (app_id, expires_at);

create table portal_sessions (
  secret_hash text collate "C" primary key,
  -- a session is never worth more than its link: revoking or expiring the link ends it
  token_id text not null references portal_tokens (id) on delete cascade,
  created_at timestamptz not null default now()
);
create index portal_sessions_token_idx on portal_sessions (token_id);
