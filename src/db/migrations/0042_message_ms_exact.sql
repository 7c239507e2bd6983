-- hookrelay_message_ms (0034) read the millisecond of an id by dividing its 128-bit value
-- by 2^80 as numeric, and numeric division keeps about 16 significant digits: with 13 of
-- them in the milliseconds, a quotient whose fraction was above about 0.99995 (the id's 80
-- random bits near their top, about one id in 20,000) rounded up to the next millisecond.
-- The API computes the same millisecond exactly (src/ids.ts, idTimeMs) and stores it, so a
-- lookup by such a message's id looked in the wrong millisecond and answered 404. The
-- integer division below is exact.
--
-- Rows an SQL statement wrote with 0034's function (operational events, test messages)
-- may still carry the millisecond after; lookups by id also read that one
-- (src/db/sql/message-ms.ts), so nothing is rewritten here.
create or replace function hookrelay_message_ms(id text) returns bigint
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
  return div(v, 1208925819614629174706176)::bigint; -- 2^80
end
$$;
