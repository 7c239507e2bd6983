-- Opaque delivery and attempt ids (docs/public-ids.md): the rows keep their sequential
-- bigint keys, and what is shown is a keyed permutation of them (src/ids-public.ts), so a
-- shown id tells nobody how many deliveries the installation has made.
create table public_id_key (
  -- one row per installation
  singleton boolean primary key default true check (singleton),
  -- 32 bytes from 244 random bits (two v4 UUIDs; gen_random_uuid() is core since
  -- PostgreSQL 13, so no pgcrypto). Never change it: every id shown so far would change.
  secret bytea not null check (length(secret) = 32),
  -- the highest keys that existed here before ids became opaque: they were shown as
  -- dlv_<n> / atmpt_<n>, so an app-scoped key may still name them that way (and no higher:
  -- probing newer numbers would tell a tenant where its rows fall in the global sequence)
  legacy_delivery_max bigint not null,
  legacy_attempt_max bigint not null
);

-- The sequences' last values, not max(id): numbers handed out to transactions still open
-- (another process, during the upgrade) were shown in the old form too.
insert into public_id_key (secret, legacy_delivery_max, legacy_attempt_max)
select sha256(convert_to(gen_random_uuid()::text || gen_random_uuid()::text, 'UTF8')),
       coalesce(pg_sequence_last_value(pg_get_serial_sequence('deliveries', 'id')::regclass), 0),
       coalesce(pg_sequence_last_value(pg_get_serial_sequence('attempts', 'id')::regclass), 0);

-- The shown id of row key `n` with `prefix` ('dlv_' or 'atmpt_'), exactly as
-- makePublicIds().format computes it (test/public-ids-sql.test.ts compares the two): for
-- the SQL that writes ids into payloads itself (operational events, written in the same
-- statement that inserts the attempt). Six Feistel rounds over 32-bit halves, round
-- function = first 4 bytes of sha256(secret || prefix || round byte || half, big-endian),
-- then base62: the top digit (0-21) as a letter A-V, and 10 more digits.
create function hookrelay_public_id(prefix text, n bigint) returns text
language plpgsql stable strict as $$
declare
  alphabet constant text := '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
  k bytea := (select secret from public_id_key);
  p bytea := convert_to(prefix, 'UTF8');
  l bigint := n >> 32;
  r bigint := n & 4294967295;
  h bytea;
  t bigint;
  v numeric;
  tail text := '';
begin
  if n < 0 then
    raise exception 'not a row key: %', n;
  end if;
  for i in 0..5 loop
    h := sha256(k || p || set_byte('\x00'::bytea, 0, i) || substr(int8send(r), 5, 4));
    t := r;
    r := l # ((get_byte(h, 0)::bigint << 24) | (get_byte(h, 1) << 16)
              | (get_byte(h, 2) << 8) | get_byte(h, 3));
    l := t;
  end loop;
  v := l::numeric * 4294967296 + r;
  for i in 1..10 loop
    tail := substr(alphabet, (v % 62)::integer + 1, 1) || tail;
    v := div(v, 62);
  end loop;
  return prefix || substr(alphabet, v::integer + 11, 1) || tail;
end
$$;
