-- Where a delivery is, from its id alone (docs/history.md, "Lookups of a delivery by id"):
-- deliveries are partitioned by their message's time (message_ms), which their ids do not
-- carry, so a lookup by id alone probed every period's id index. Ids come from one
-- sequence (delivery_ids) in the order they are written, so a block of 65,536 consecutive
-- ids holds deliveries of a few periods only (a replay or a resend of an older message
-- widens its block's range, never makes it wrong). The maintenance task
-- `delivery-id-blocks` writes each block's range once no transaction that could still
-- write an id of it is open; a lookup bounds message_ms by its block's range, and reads
-- every period only for an id of a block not summarized yet (the newest minutes).
create table delivery_id_blocks (
  -- id >> 16
  block bigint primary key,
  min_ms bigint not null,
  max_ms bigint not null
);

-- The summaries' progress: blocks below done_below are written; mark_seq is the sequence's
-- value read at mark_at, summarized once every transaction open then has ended.
create table delivery_id_block_marks (
  one boolean primary key default true check (one),
  done_below bigint not null,
  mark_seq bigint,
  mark_at timestamptz
);
insert into delivery_id_block_marks (done_below) values (0);
