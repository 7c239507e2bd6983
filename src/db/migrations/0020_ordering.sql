-- Ordered delivery per key (docs/delivery.md, "Ordering").
--
-- A message may carry an ordering key (1-128 characters). Its fan-out copies the key onto
-- each delivery row, so the claim reads it without a join; a FIFO endpoint's rows all get
-- the empty string instead (no message key can be empty): the endpoint's one key. For each
-- (endpoint, key) the claim takes a row only when no row of the same pair with a smaller
-- id (the acceptance order) is still queued (pending, failed waiting for its retry, or in
-- flight), nor dead-lettered when the endpoint blocks on a dead head.
--
-- All columns are nullable with no default: PostgreSQL adds them without rewriting the
-- tables. A row without a key is unordered, as before.
alter table messages add column ordering_key text;
alter table deliveries add column ordering_key text;

-- ordering            none (null): each message on its own; fifo: the whole endpoint is one key
-- ordered_dead_letter block (null): a dead-lettered row holds its key until an operator
--                     requeues or cancels it; skip: the next row of the key goes
alter table endpoints
  add column ordering text
    constraint endpoints_ordering_check check (ordering in ('none', 'fifo')),
  add column ordered_dead_letter text
    constraint endpoints_ordered_dead_letter_check check (ordered_dead_letter in ('block', 'skip'));

-- The claim's "is an earlier row of this key still queued?" probe: a backward range scan
-- on (endpoint_id, ordering_key, id < this one) that stops at the first entry. Partial:
-- unordered rows get no entry, so unordered traffic pays nothing for it, and a key's rows
-- leave it once they are finished.
create index deliveries_ordered_queued_idx on deliveries (endpoint_id, ordering_key, id)
  where queued and ordering_key is not null;

-- The same probe for a blocking endpoint's dead-lettered rows.
create index deliveries_ordered_dead_idx on deliveries (endpoint_id, ordering_key, id)
  where dead_lettered and ordering_key is not null;

-- Switching an endpoint to FIFO folds its rows still queued into its one key: from then on
-- they go out one at a time by id, which is their acceptance order. A trigger, so every
-- way of writing an endpoint (API, CLI, dashboard) does it in the same transaction.
create function hookrelay_endpoints_fifo_fold() returns trigger
language plpgsql as $$
begin
  update deliveries set ordering_key = ''
  where endpoint_id = new.id and queued and ordering_key is distinct from '';
  return null;
end
$$;

create trigger endpoints_fifo_fold
  after update of ordering on endpoints
  for each row
  when (new.ordering = 'fifo' and old.ordering is distinct from 'fifo')
  execute function hookrelay_endpoints_fifo_fold();
