-- Backpressure (docs/delivery.md, Backpressure): a 429, or a 503 with a usable
-- Retry-After, pauses its endpoint and is not a failure.
--
-- deliveries.attempts_given_back: how many of the delivery's attempts a backpressure answer
-- gave back (at most BACKPRESSURE_GIVE_BACKS, src/domain/backpressure.ts). attempt_count
-- still counts every request; the delivery is dead-lettered when attempt_count minus this
-- reaches max_attempts. A requeue sets it back to 0 with the rest of the budget.
alter table deliveries add column attempts_given_back smallint not null default 0;

-- endpoint_health.resume_room: after a pause, how many deliveries the endpoint may have in
-- flight while it resumes; null when it is not resuming (only maxInFlight applies). A pause
-- sets it to 1; each delivered answer adds 1 (so it doubles per round trip, as TCP's slow
-- start does); the claim takes no more than it allows (src/queue/claim-deliveries.ts).
alter table endpoint_health add column resume_room integer;
