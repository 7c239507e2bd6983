-- The claim's floor (docs/history.md, "Messages and deliveries", the claim): a lower bound
-- of the message_ms of every queued delivery outside the legacy partition, so that the
-- claim reads the periods since then and not every day's partial due indexes. One row.
-- Raised by the maintenance task to the oldest queued row's period (src/ops/delivery-floor.ts),
-- lowered by every statement that makes an older delivery queued again (the requeue of a
-- dead letter, a resend, a replay: db/sql/delivery-floor.ts). 0 reads every period, as
-- before this table.
create table delivery_floor (
  one boolean primary key default true check (one),
  ms bigint not null
);
insert into delivery_floor (ms) values (0);
