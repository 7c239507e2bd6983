-- The dead-letter list in the order of death: the newest death first, the delivery id
-- breaking ties (src/ops/dead-letters.ts, LIST_SQL). A dead row's updated_at is when it
-- died. A page is "(updated_at, id) < (the last row's)" ordered by both, descending: each
-- index below ends in (updated_at, id), so a page is a backward range scan that stops after
-- `limit` rows whatever the table holds, instead of reading and sorting every dead letter.
--
-- All three are partial (where dead_lettered): a row gets entries only when it dies, so the
-- queue's writes to live rows pay nothing for them.

-- Every dead letter (an admin's list).
create index deliveries_dead_letter_order_idx on deliveries (updated_at, id) where dead_lettered;

-- One endpoint's (the list filtered by endpoint; also health counts, the analysis and
-- requeue by endpoint, which the former (endpoint_id, updated_at) index served).
create index deliveries_dead_letter_endpoint_idx on deliveries (endpoint_id, updated_at, id)
  where dead_lettered;
drop index deliveries_dead_letter_idx;

-- One app's (an app-scoped key's list, the portal, `?app_id=`): without it, an app with few
-- dead letters among millions would be found by walking everyone's.
create index deliveries_dead_letter_app_idx on deliveries (app_id, updated_at, id)
  where dead_lettered;
