-- Claims that rewrite a delivery row in place.
--
-- A claim used to change indexed values of every row it took (status, which the partial
-- indexes' predicates read, and next_attempt_at, the due index's key), so each claimed row
-- got a new entry in every index of the table: measured, about 20 buffers and 8 WAL records
-- per row, half the claim's time. PostgreSQL can rewrite a row in place (a HOT update: no
-- index entry at all) when no value that any index reads changes and the page has room.
-- So:
--
-- * the indexes read two stored flags derived from status instead of status itself; a
--   claim moves a row from pending or failed to in_flight, and both flags stay as they are;
-- * a claim leaves next_attempt_at (and updated_at) alone: the lease lives in
--   lease_expires_at, which no index reads, and in the claims table below;
-- * pages keep a fifth of their room free for those in-place versions.
--
-- Every query that wants these indexes says "queued" or "dead_lettered", not the status
-- list the flag stands for (the planner cannot see that they mean the same).
alter table deliveries
  add column queued boolean generated always as (status in ('pending', 'failed', 'in_flight')) stored,
  add column dead_lettered boolean generated always as (status = 'dead_letter') stored;

alter table deliveries set (fillfactor = 80);

drop index deliveries_due_idx;
drop index deliveries_in_flight_idx;
drop index deliveries_dead_letter_idx;

-- The claim walks endpoints and, per endpoint, takes its due rows oldest first; in-flight
-- rows stay listed (at the due time they were claimed at) and are stepped over.
create index deliveries_due_idx on deliveries (endpoint_id, next_attempt_at)
  with (deduplicate_items = off) where queued;

-- Dead letters per endpoint (health counts, dead-letter listings), oldest first.
create index deliveries_dead_letter_idx on deliveries (endpoint_id, updated_at) where dead_lettered;

-- One row per claim statement that took rows: which rows, for whom, until when. A worker
-- deletes it with the result write of the claim's last row. A row still here after its
-- lease is a claim whose worker died (or lost the database): any worker then hands its
-- unfinished rows back (src/queue/release-deliveries.ts). This is how rows come back
-- without an index on the deliveries' lease columns, which would end the in-place claims.
create table claims (
  token uuid primary key,
  worker_id text not null,
  delivery_ids bigint[] not null,
  lease_expires_at timestamptz not null
);

create index claims_lease_idx on claims (lease_expires_at);

-- In-flight rows of claims made before this migration keep their leases (next_attempt_at
-- held the lease's end then): after it, the usual hand-back returns them.
insert into claims (token, worker_id, delivery_ids, lease_expires_at)
select claim_token, min(coalesce(claimed_by, '')), array_agg(id order by id), max(next_attempt_at)
from deliveries
where status = 'in_flight' and claim_token is not null
group by claim_token;

-- (An in-flight row without a token has no claim to come back through: due again now.)
update deliveries
set status = case when attempt_count = 0 then 'pending' else 'failed' end, next_attempt_at = now()
where status = 'in_flight' and claim_token is null;
