-- hookrelay:no-transaction
--
-- Before the attempts table becomes partitioned (0026), its rows are checked to hold ids
-- below the first time-carrying id (that of 2024-01-01, hookrelay_attempt_id_at), so that
-- 0026 attaches the table as the partition of older ids without scanning it under a lock.
-- Outside a transaction: adding the constraint NOT VALID is a catalog change; VALIDATE
-- then reads every row while inserts and reads go on (it takes SHARE UPDATE EXCLUSIVE).
-- Both steps are safe to run again.
do $$
begin
  if not exists (select from pg_constraint where conname = 'attempts_legacy_range'
                 and conrelid = 'attempts'::regclass) then
    alter table attempts add constraint attempts_legacy_range check (id < 264724335820800) not valid;
  end if;
end
$$;

alter table attempts validate constraint attempts_legacy_range;
