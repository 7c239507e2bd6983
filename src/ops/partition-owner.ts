/**
 * Which role creates and drops partitions (docs/history.md, "Creation ahead of time"). A
 * server whose role owns the tables does it itself. A server whose role has DML rights
 * only (docs/database.md, "Roles and schema") does it through the role of
 * HOOKRELAY_MIGRATION_DATABASE_URL, the owner that migrates: one connection, opened for the
 * partition work of a start or a maintenance run and closed after it, its search_path set
 * to the server's schema. Without that URL nobody does it: rows wait in the default
 * partition and retention deletes them in batches (correct, without the cheap drop).
 */

import { makePool, type Pool } from "../db/pool.ts";
import type { Logger } from "../logger.ts";
import { mayManagePartitions } from "./attempt-partitions.ts";

/** Where partition work runs: the pool given to `work`, or null when no role may do it. */
export type PartitionOwner = Pool | null;

/**
 * Runs `work` with a pool whose role may create and drop partitions: `pool` when its own
 * role may; else one connection as `migrationDatabaseUrl`'s role when given and that role
 * may; else null. The owner's connection is closed when `work` ends.
 */
export async function withPartitionOwner<T>(
  pool: Pool,
  migrationDatabaseUrl: string | undefined,
  work: (owner: PartitionOwner) => Promise<T>,
  logger?: Logger,
): Promise<T> {
  if (await mayManagePartitions(pool)) return work(pool);
  if (!migrationDatabaseUrl) return work(null);
  const { rows } = await pool.query<{ schema: string | null }>("select current_schema() as schema");
  const owner = makePool({
    connectionString: migrationDatabaseUrl,
    max: 1,
    applicationName: "hookrelay-partitions",
    logger,
    searchPath: rows[0]?.schema ?? undefined,
  });
  try {
    return await work((await mayManagePartitions(owner)) ? owner : null);
  } finally {
    await owner.end();
  }
}

/** The sentence a server says at start when no role of its own may manage partitions. */
export const NO_PARTITION_OWNER =
  "this role does not own the attempts table and HOOKRELAY_MIGRATION_DATABASE_URL names no role that does: no partition of attempts, messages or deliveries is created or dropped, so their rows stay in attempts_default, messages_default and deliveries_default and retention deletes them in batches (docs/history.md)";
