-- A claim rewrites its delivery rows in place (a HOT update, migration 0007) only where the
-- row's page has room for the new version, which is why deliveries kept a fifth of each
-- page free (fillfactor 80). When 0036 partitioned the table, the default partition was
-- made without that room, and so was every period made since: a partitioned table holds
-- no storage parameter of its own and `create table (like ...)` copies none. In pages
-- filled to the brim a claim wrote a new entry into each of five indexes for every row it
-- took, and the bottom-up cleanup of those entries came on top (docs/performance.md,
-- "Claims in place again").
--
-- Periods are now created with the setting (src/ops/message-partitions.ts); this gives it
-- to the partitions that exist. It takes a lock that lets reads and writes go on, and
-- rewrites nothing: pages filled from now on keep the room, full ones stay full until
-- their rows are gone (with their period, within days).
do $$
declare
  part regclass;
begin
  for part in select relid from pg_partition_tree('deliveries') where isleaf loop
    execute format('alter table %s set (fillfactor = 80)', part);
  end loop;
end $$;
