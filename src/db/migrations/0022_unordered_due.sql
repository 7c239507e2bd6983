-- The claim's unordered rows apart from the keyed ones (docs/delivery.md, "Ordering";
-- src/queue/claim-deliveries.ts, PICK_SQL). An endpoint with no keyed row queued takes its
-- unordered rows, oldest due first, through this index; an endpoint with a deep keyed
-- backlog and fewer claimable key heads than room takes them through it too, beside one
-- probe per key of deliveries_ordered_queued_idx (0020). Keyed rows get no entry, so
-- neither walk steps over the rows that wait behind their key's head.
--
-- Like deliveries_due_idx (migration 0007) it reads no value a claim changes (a claim
-- leaves next_attempt_at, queued and ordering_key alone), so claims stay in-place updates;
-- in-flight rows stay listed and are stepped over, and deduplication stays off for the
-- reason of migration 0005.
create index deliveries_unordered_due_idx on deliveries (endpoint_id, next_attempt_at)
  with (deduplicate_items = off) where queued and ordering_key is null;
