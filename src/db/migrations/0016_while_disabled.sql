-- What a message that arrives while an endpoint is disabled does for that endpoint
-- (docs/delivery.md, "While an endpoint is disabled"): its delivery row is written either
-- way, as
--   hold  pending: it waits, and goes out (oldest first) when the endpoint is enabled
--   skip  canceled, last_error_kind 'endpoint_disabled': never sent on enable; replay-missing
--         sends it again
-- Null: the process default (HOOKRELAY_WHILE_DISABLED, hold unless set). Nullable with no
-- default: PostgreSQL adds the column without rewriting the table.
alter table endpoints
  add column while_disabled text
    constraint endpoints_while_disabled_check check (while_disabled in ('hold', 'skip'));
