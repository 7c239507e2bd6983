-- The millisecond a message id carries (src/ids.ts: `msg_` and 22 base62 digits of the
-- 48-bit millisecond timestamp shifted left by 80 bits, plus 80 random bits), the key
-- messages and deliveries are partitioned by (docs/history.md, "Messages and deliveries");
-- 0 for an id of another shape (written by a test or an import), whose rows are the
-- legacy partitions'. Immutable: a call with a constant argument is folded when the
-- statement is planned, so partitions are pruned then.
create function hookrelay_message_ms(id text) returns bigint
language plpgsql immutable parallel safe strict as $$
declare
  v numeric := 0;
  i int;
begin
  if id !~ '^msg_[0-9A-Za-z]{22}$' then
    return 0;
  end if;
  for i in 5..26 loop
    v := v * 62 + (strpos('0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz',
                          substr(id, i, 1)) - 1);
  end loop;
  return floor(v / 1208925819614629174706176)::bigint; -- 2^80
end
$$;
