/**
 * Takes tables' files out of the operating system's page cache, as the files of a day a
 * month old are on a real installation: retention purges days that nothing has read for
 * weeks, while a bench purges a day it seeded (or copied) minutes ago, whose pages are all
 * still cached. Dropping a table whose files are cached costs the kernel the freeing of
 * every cached page, charged to the dropping backend; a DELETE of a cold table reads its
 * pages from disk. Both purges of scenarios 16 and 19 start from the cold state
 * (docs/performance.md, "Scenario 16").
 *
 * Each file is written back and dropped from the cache with GNU dd's `oflag=nocache` and
 * `count=0` (posix_fadvise DONTNEED over the whole file), which needs no privilege.
 */
import { execFile } from "node:child_process";
import { readdir, stat } from "node:fs/promises";
import path from "node:path";
import { promisify } from "node:util";
import type { Pool } from "../../src/db/pool.ts";

const run = promisify(execFile);

/**
 * The files of `tables` (each with its indexes, its TOAST table and the TOAST index),
 * relative to the data directory: every segment and fork of each relation.
 */
async function relationFiles(pool: Pool, dataDir: string, tables: string[]): Promise<string[]> {
  const { rows } = await pool.query<{ f: string }>(
    `with t as (select to_regclass(name) as oid from unnest($1::text[]) name),
     rel as (
       select t.oid from t
       union all select i.indexrelid from pg_index i join t on i.indrelid = t.oid
       union all select c.reltoastrelid from pg_class c join t on c.oid = t.oid where c.reltoastrelid <> 0
       union all select i.indexrelid from pg_index i join pg_class c on i.indrelid = c.reltoastrelid
                 join t on c.oid = t.oid where c.reltoastrelid <> 0
     )
     select pg_relation_filepath(rel.oid) as f from rel where rel.oid is not null`,
    [tables],
  );
  const files: string[] = [];
  for (const { f } of rows) {
    const dir = path.join(dataDir, path.dirname(f));
    const base = path.basename(f);
    const pattern = new RegExp(`^${base}(\\.\\d+|_fsm|_vm|_init)?$`);
    for (const name of await readdir(dir)) if (pattern.test(name)) files.push(path.join(dir, name));
  }
  return files;
}

/** Drops `tables`' files from the page cache; returns their size in bytes. */
export async function evictFromPageCache(
  pool: Pool,
  dataDir: string,
  tables: string[],
): Promise<number> {
  let bytes = 0;
  for (const file of await relationFiles(pool, dataDir, tables)) {
    bytes += (await stat(file)).size;
    await evictFile(file);
  }
  return bytes;
}

/** Writes `file` back and drops it from the page cache. */
export async function evictFile(file: string): Promise<void> {
  await run("dd", [`of=${file}`, "oflag=nocache", "conv=notrunc,fdatasync", "count=0"]);
}
