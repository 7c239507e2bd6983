/**
 * A delivered history in the shapes hookrelay leaves it, for scenarios 19 (steady state) and
 * 20 (soak): messages at even times over a span, each with one delivery (delivered; one in
 * 200 dead-lettered) and `attemptsPerMessage` attempts (all but the last failed with a 503),
 * message ids carrying their time as `newId` makes them and attempt ids as the result writer
 * makes them. Written with INSERT ... SELECT generate_series into the tables' own columns, so
 * a partitioned table routes each row itself (no partition is named here); the partitions
 * of the span must exist first (`ensureAttemptPartitions`).
 */
import { type Pool, withTransaction } from "../../src/db/pool.ts";
import { EVENT_TYPE, type Tenant } from "./seed.ts";

const ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
const DAY = 86_400_000;

/**
 * The first 9 of the 22 base62 characters of a message id made at `ms` (src/ids.ts: the
 * timestamp shifted by 80 bits, plus 80 random bits; here the middle of that range). Any 13
 * base62 characters after them keep the id within `ms` (62^13 < 2^79), so one prefix per
 * second serves every row of that second, followed by the row's number in decimal.
 */
export function idPrefixAt(ms: number): string {
  let value = (BigInt(ms) << 80n) | (1n << 79n);
  let out = "";
  for (let i = 0; i < 22; i++) {
    out = ALPHABET[Number(value % 62n)] + out;
    value /= 62n;
  }
  return out.slice(0, 9);
}

export interface SpanSeed {
  /** epoch ms of the first message; rows at even times up to `toMs` (excluded) */
  fromMs: number;
  toMs: number;
  messages: number;
  attemptsPerMessage: number;
  /** numbers the event ids (evt-<n>) across spans */
  firstEventNumber: number;
}

/**
 * Seeds one span (at most a day) in one transaction. Foreign keys are not checked (the rows
 * are consistent by construction; session_replication_role = replica, as a restore does).
 */
export async function seedSpan(pool: Pool, tenants: Tenant[], s: SpanSeed): Promise<void> {
  if (s.toMs - s.fromMs > DAY) throw new Error("seedSpan: a span is at most a day");
  const span = s.toMs - s.fromMs;
  const seconds = Math.ceil(span / 1000);
  const prefixes = Array.from({ length: seconds }, (_, i) => idPrefixAt(s.fromMs + i * 1000 + 500));
  // message g is at fromMs + g * span / n ms. The rows are made second by second (each
  // second's g range beside its id prefix): indexing a long text[] per row would walk it.
  const rows = `from unnest($4::text[]) with ordinality p(prefix, sec),
    generate_series(ceil((p.sec - 1) * 1000 * $2::numeric / $3::bigint)::bigint,
                    least($2::bigint, ceil(p.sec * 1000 * $2::numeric / $3::bigint)::bigint) - 1) g,
    lateral (select $1::timestamptz + floor(g::numeric * $3::bigint / $2::bigint) * interval '1 millisecond' as t,
                    'msg_' || p.prefix || lpad(g::text, 13, '0') as mid) x,
    unnest($5::text[], $6::text[], $7::text[]) with ordinality tn(app, ep, url, k)
    where tn.k = g % ${tenants.length} + 1`;
  const params = [
    new Date(s.fromMs),
    s.messages,
    span,
    prefixes,
    tenants.map((t) => t.appId),
    tenants.map((t) => t.endpointId),
    tenants.map((t) => t.url),
  ];
  const n = s.attemptsPerMessage;
  await withTransaction(pool, async (client) => {
    await client.query("set local session_replication_role = replica");
    // the partition key of messages and deliveries where they are partitioned (migration
    // 0034: the millisecond the message's id carries, which is its second's prefix's)
    const { rows: keyed } = await client.query(
      `select exists (select from information_schema.columns
                      where table_name = 'messages' and column_name = 'message_ms') as present`,
    );
    const msCol = keyed[0].present ? ", message_ms" : "";
    const msVal = keyed[0].present ? `, ${s.fromMs}::bigint + (p.sec - 1) * 1000 + 500` : "";
    // each eventId also in message_event_ids, as the enqueue statement writes it (migration 0033)
    const { rows: eventIds } = await client.query(
      "select to_regclass('message_event_ids') is not null as present",
    );
    const insertMessages = `insert into messages (id, app_id, event_type, event_id, payload, created_at${msCol})
       select mid, tn.app, $8::text, 'evt-' || ($9::bigint + g),
              '{"type":"order.paid","seq":' || g || ',"order":{"id":"ord_' || g ||
              '","total":"149.90","currency":"EUR","items":3},"customer":{"id":"cus_' || (g % 997) ||
              '","country":"DE","tier":"gold"},"occurredAt":"2025-01-01T12:00:00.000Z"}', t${msVal}
       ${rows}`;
    await client.query(
      eventIds[0].present
        ? `with m as (${insertMessages} returning app_id, event_id, id, created_at)
           insert into message_event_ids (app_id, event_id, message_id, created_at) select * from m`
        : insertMessages,
      [...params, EVENT_TYPE, s.firstEventNumber],
    );
    // each delivery with its attempts, the attempt j one second after the attempt j - 1
    await client.query(
      `with d as (
         insert into deliveries (message_id, endpoint_id, app_id, status, attempt_count, max_attempts,
                                 next_attempt_at, created_at, updated_at, delivered_at, last_attempt_at,
                                 last_status_code, last_response_ms${msCol})
         select mid, tn.ep, tn.app, case when g % 200 = 0 then 'dead_letter' else 'delivered' end,
                $8::int, $8::int, t, t, t + ($8::int - 1) * interval '1 second',
                case when g % 200 = 0 then null else t + ($8::int - 1) * interval '1 second' end,
                t + ($8::int - 1) * interval '1 second', case when g % 200 = 0 then 503 else 200 end, 20 + g % 200${msVal}
         ${rows}
         order by g
         returning id, message_id, endpoint_id, app_id, created_at, status)
       insert into attempts (id, delivery_id, message_id, endpoint_id, app_id, attempt_number, trigger, url,
                             started_at, latency_ms, outcome, status_code, response_body, created_at)
       select hookrelay_attempt_id_at(a.at) + (d.id * $8::int + j) % 2097152, d.id, d.message_id,
              d.endpoint_id, d.app_id, j + 1, 'scheduled', u.url,
              a.at, 20 + d.id % 200, case when ok then 'success' else 'failure' end,
              case when ok then 200 else 503 end, '{"ok":true}', a.at
       from d join unnest($6::text[], $7::text[]) u(ep, url) on u.ep = d.endpoint_id,
            generate_series(0, $8::int - 1) j,
            lateral (select d.created_at + j * interval '1 second' + interval '100 milliseconds' as at,
                            d.status = 'delivered' and j = $8::int - 1 as ok) a`,
      [...params, n],
    );
  });
}

/**
 * SQL for the leaves of `table` (an expression of type regclass): its partitions, or the
 * table itself when it is not partitioned (pg_partition_tree lists nothing for one).
 */
export const leavesOf = (table: string) =>
  `select relid from pg_partition_tree(${table}) where isleaf
   union all select ${table} where not exists (select from pg_partition_tree(${table}))`;

/** A table and its partitions (if any): heap with TOAST, indexes, and the leaves' count. */
export interface TableSize {
  table: number;
  indexes: number;
  leaves: number;
}

/** Sizes of messages, deliveries and attempts, summed over their partitions. */
export async function historySizes(pool: Pool): Promise<Record<string, TableSize>> {
  const out: Record<string, TableSize> = {};
  for (const name of ["messages", "deliveries", "attempts"]) {
    const { rows } = await pool.query(
      `select coalesce(sum(pg_table_size(relid)), 0)::float8 as t,
              coalesce(sum(pg_indexes_size(relid)), 0)::float8 as i, count(*)::int as n
       from (${leavesOf("$1::regclass")}) l`,
      [name],
    );
    out[name] = { table: rows[0].t, indexes: rows[0].i, leaves: rows[0].n };
  }
  return out;
}

/**
 * The secondary indexes of the history tables (not those behind a primary key or unique
 * constraint): dropped before a big seeding and built again after it, which is several
 * times faster than keeping them up row by row. On a partitioned table the parent's index
 * is dropped and made again with its partitions'.
 */
export async function dropSecondaryIndexes(pool: Pool): Promise<string[]> {
  const { rows } = await pool.query<{ name: string; def: string }>(
    `select i.indexrelid::regclass::text as name, pg_get_indexdef(i.indexrelid) as def
     from pg_index i
     where i.indrelid in ('messages'::regclass, 'deliveries'::regclass, 'attempts'::regclass)
       and not exists (select from pg_constraint c where c.conindid = i.indexrelid)`,
  );
  for (const r of rows) await pool.query(`drop index ${r.name}`);
  // "ON ONLY" would make a parent index without its partitions' (invalid)
  return rows.map((r) => r.def.replace(" ON ONLY ", " ON "));
}

export async function createIndexes(pool: Pool, defs: string[]): Promise<void> {
  for (const def of defs) await pool.query(def);
}
