/**
 * Deduplication in the receiver's own PostgreSQL database: one small table of seen
 * webhook ids. For exactly-once effects call markSeen() with the client of the transaction
 * that performs the effect: the mark and the effect then commit, or roll back, together
 * (docs/receiver.md, Dedup). `pg` is never imported: every function takes the client or
 * pool you already have, anything with `query(text, values)`.
 */
import type { DedupStore } from "./dedup-store.ts";

/** What the functions need of a pg Client, PoolClient or Pool (node-postgres, or alike). */
export interface Queryable {
  query(text: string, values?: unknown[]): Promise<{ rowCount: number | null }>;
}

export interface DedupTableOptions {
  /** the table, optionally schema-qualified (`schema.table`); default `seen_webhooks` */
  table?: string;
}

export const DEFAULT_DEDUP_TABLE = "seen_webhooks";
const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

interface TableName {
  /** the quoted, possibly schema-qualified name */
  qualified: string;
  /** the bare table name, for naming its index */
  bare: string;
}

function tableName(options: DedupTableOptions = {}): TableName {
  const table = options.table ?? DEFAULT_DEDUP_TABLE;
  const parts = table.split(".");
  if (parts.length > 2 || !parts.every((p) => IDENTIFIER.test(p))) {
    throw new RangeError(`table must be a plain identifier or schema.table, got ${table}`);
  }
  return { qualified: parts.map((p) => `"${p}"`).join("."), bare: parts.at(-1)! };
}

/** The DDL of the table, for a migration tool of your own; createDedupTable() runs it. */
export function dedupTableSql(options: DedupTableOptions = {}): string {
  const { qualified, bare } = tableName(options);
  return `create table if not exists ${qualified} (
  webhook_id text primary key,
  seen_at timestamptz not null default now()
);
-- purgeSeen() deletes by age
create index if not exists "${bare}_seen_at_idx" on ${qualified} (seen_at);
`;
}

/**
 * Creates the table and its index if they do not exist. Run it at deploy time (two
 * processes creating the same table at the same instant can collide in the catalog).
 */
export async function createDedupTable(
  client: Queryable,
  options: DedupTableOptions = {},
): Promise<void> {
  await client.query(dedupTableSql(options));
}

/**
 * Marks `id` seen; false when it already was. Inside your transaction: if another
 * transaction has just inserted the same id and not yet committed, this insert waits for
 * it (the primary key), then returns false if that one committed, or true if it rolled
 * back. So of concurrent deliveries of one message exactly one transaction gets true.
 */
export async function markSeen(
  client: Queryable,
  id: string,
  options: DedupTableOptions = {},
): Promise<boolean> {
  const { qualified } = tableName(options);
  const result = await client.query(
    `insert into ${qualified} (webhook_id) values ($1::text) on conflict (webhook_id) do nothing`,
    [id],
  );
  return result.rowCount === 1;
}

/** Whether `id` is marked seen (committed, as your transaction sees it). */
export async function isSeen(
  client: Queryable,
  id: string,
  options: DedupTableOptions = {},
): Promise<boolean> {
  const { qualified } = tableName(options);
  const result = await client.query(`select 1 from ${qualified} where webhook_id = $1::text`, [id]);
  return result.rowCount === 1;
}

export interface PurgeSeenOptions extends DedupTableOptions {
  /** marks older than this are deleted, in milliseconds; keep it longer than the sender
   * may redeliver (hookrelay: retries, then manual requeue or resend of dead letters) */
  olderThanMs: number;
  /** rows per delete statement, so a purge never holds many locks at once; default 5_000 */
  batchSize?: number;
}

/** Deletes old marks in batches; returns how many. Use a pool, not a transaction's client. */
export async function purgeSeen(client: Queryable, options: PurgeSeenOptions): Promise<number> {
  const { qualified } = tableName(options);
  const batchSize = options.batchSize ?? 5_000;
  if (!(options.olderThanMs >= 0)) {
    throw new RangeError(`olderThanMs must be >= 0, got ${options.olderThanMs}`);
  }
  let total = 0;
  for (;;) {
    // a bounded batch by the seen_at index; ids deleted meanwhile by another purge just
    // drop out of the join
    const result = await client.query(
      `delete from ${qualified} t
       using (select webhook_id from ${qualified}
              where seen_at < now() - $1::bigint * interval '1 millisecond'
              limit $2::int) old
       where t.webhook_id = old.webhook_id`,
      [Math.floor(options.olderThanMs), batchSize],
    );
    const deleted = result.rowCount ?? 0;
    total += deleted;
    if (deleted < batchSize) return total;
  }
}

/**
 * A DedupStore for the middlewares on a pool: the mark is written after the handler
 * answered 2xx, in its own statement, so a crash between the effect and the mark can let
 * one duplicate through. For exactly-once effects call markSeen() in your transaction.
 */
export function makePgDedupStore(pool: Queryable, options: DedupTableOptions = {}): DedupStore {
  tableName(options); // refuse a bad name now, not on the first request
  return {
    seen: (id) => isSeen(pool, id, options),
    markSeen: (id) => markSeen(pool, id, options),
  };
}
