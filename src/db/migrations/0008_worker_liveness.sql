-- Worker liveness (docs/worker-liveness.md). Every worker process holds, for its whole
-- life and on a connection of its own, a session-level advisory lock: the pair
-- (hookrelay's worker lock class, the worker's number from worker_lock_seq). PostgreSQL
-- releases it the moment that connection ends, so a lock anyone can take belongs to a
-- worker that is gone. A claim records the number of the worker that made it; any worker
-- that can take a claim's lock hands its rows back (src/queue/release-deliveries.ts), in
-- about a second instead of when the lease runs out. The lease stays, for a worker that
-- is alive but stuck, and for claims without a number (made before this migration).
--
-- The numbers wrap after 2^31 worker starts; a number is taken once per process.
create sequence worker_lock_seq as integer cycle;

-- No index: the hand-back reads the whole claims table (one row per claim statement still
-- open, a few per worker), and an index would cost every claim an entry.
alter table claims add column worker_lock integer;
