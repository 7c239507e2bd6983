/**
 * A large fixture loaded the way a bulk load is done, instead of row by row through every
 * index: the named tables' indexes that back no constraint are dropped, `seed` inserts its
 * rows with foreign-key checks off (a fixture's rows refer to rows it made: consistent by
 * construction), each index is built again from its own definition (one sort instead of a
 * B-tree insert per row) and the tables are analyzed, as autovacuum would after such an
 * insert. All in one transaction, so a failure leaves the schema as it was. The schema
 * after it is the schema before it: the same indexes, by name and definition, on every
 * partition, attached as before (checked: it throws otherwise). Primary keys and unique constraints stay and
 * are kept up row by row.
 */
import type { Pool, PoolClient } from "../../src/db/pool.ts";

/** An index of one partition, attached to its partitioned table's index. */
interface Part {
  name: string;
  definition: string;
}

export async function bulkSeed(
  pool: Pool,
  tables: readonly string[],
  seed: (db: PoolClient) => Promise<void>,
): Promise<void> {
  const db = await pool.connect();
  /** Every index of the schema: name, definition, validity and the index it is attached to. */
  const indexes = async () =>
    (
      await db.query<{ i: string }>(
        `select format('%s: %s (valid: %s, attached to: %s)', c.relname, pg_get_indexdef(c.oid),
                       i.indisvalid, coalesce((select p.inhparent::regclass::text from pg_inherits p
                                               where p.inhrelid = c.oid), 'none')) as i
         from pg_index i join pg_class c on c.oid = i.indexrelid
         where c.relnamespace = 'public'::regnamespace
         order by 1`,
      )
    ).rows.map((r) => r.i);
  try {
    await db.query("begin");
    const before = await indexes();
    const { rows } = await db.query<{ name: string; definition: string; parts: Part[] }>(
      `select i.indexrelid::regclass::text as name, pg_get_indexdef(i.indexrelid) as definition,
              coalesce((select json_agg(json_build_object('name', p.inhrelid::regclass::text,
                                                          'definition', pg_get_indexdef(p.inhrelid)))
                        from pg_inherits p where p.inhparent = i.indexrelid), '[]') as parts
       from pg_index i
       where i.indrelid = any($1::regclass[])
         and not exists (select from pg_constraint c where c.conindid = i.indexrelid)`,
      [tables],
    );
    // the replica role skips user triggers too: refuse a table that has any (none of these
    // has; the endpoints' triggers are not for a bulk load)
    const triggers = await db.query<{ name: string }>(
      `select t.tgname as name from pg_trigger t
       where not t.tgisinternal
         and (t.tgrelid = any($1::regclass[])
              or t.tgrelid in (select inhrelid from pg_inherits where inhparent = any($1::regclass[])))`,
      [tables],
    );
    if (triggers.rows.length > 0)
      throw new Error(
        `bulkSeed: ${triggers.rows.map((t) => t.name).join(", ")} would not fire: seed those rows as usual`,
      );
    for (const { name } of rows) await db.query(`drop index ${name}`);
    // foreign keys are checked by system triggers, which the replica role skips
    await db.query("set local session_replication_role = replica");
    await seed(db);
    await db.query("set local session_replication_role = origin");
    // a partitioned table's index ("ON ONLY") gets its partitions' indexes back by their
    // own names and definitions, attached to it, as pg_dump restores them
    for (const { name, definition, parts } of rows) {
      await db.query(definition);
      for (const part of parts) {
        await db.query(part.definition);
        await db.query(`alter index ${name} attach partition ${part.name}`);
      }
    }
    const after = await indexes();
    const gone = before.filter((i) => !after.includes(i));
    const added = after.filter((i) => !before.includes(i));
    if (gone.length > 0 || added.length > 0)
      throw new Error(
        `bulkSeed: the indexes differ after the load\nbefore only:\n${gone.join("\n")}\nafter only:\n${added.join("\n")}`,
      );
    await db.query("commit");
  } catch (err) {
    await db.query("rollback").catch(() => undefined);
    throw err;
  } finally {
    db.release();
  }
  await pool.query(`analyze ${tables.join(", ")}`);
}
