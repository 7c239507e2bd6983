/** A fresh database per test file, cloned from the migrated template. */
import { randomBytes } from "node:crypto";
import type pg from "pg";
import { inject } from "vitest";
import { makePool, type Pool } from "../../src/db/pool.ts";
import { withClient } from "../../src/db/short-client.ts";

export interface TestDb {
  name: string;
  url: string;
  pool: Pool;
  drop(): Promise<void>;
}

const admin = <T>(fn: (c: pg.Client) => Promise<T>): Promise<T> =>
  withClient({ connectionString: inject("pgAdminUrl") }, fn);

export async function createTestDb(options: { template?: boolean } = {}): Promise<TestDb> {
  const name = `t_${randomBytes(6).toString("hex")}`;
  // file_copy copies the template's files as they are (its checkpoints cost next to nothing
  // with fsync off) instead of writing every page to the WAL, the default since PostgreSQL
  // 15: creating and later dropping the database each cost a fraction of the default's.
  await admin((c) =>
    c.query(
      options.template === false
        ? `create database ${name} strategy = file_copy`
        : `create database ${name} template ${c.escapeIdentifier(inject("pgTemplate"))} strategy = file_copy`,
    ),
  );
  const url = inject("pgAdminUrl").replace(/\/[^/]+$/, `/${name}`);
  const pool = makePool({ connectionString: url, max: 10 });
  return {
    name,
    url,
    pool,
    async drop() {
      await pool.end();
      await admin((c) => c.query(`drop database if exists ${name} with (force)`));
    },
  };
}
