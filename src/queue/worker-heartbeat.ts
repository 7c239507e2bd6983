/**
 * The SQL of a worker's heartbeat row (migration 0015, docs/database.md): the liveness of a
 * worker that has no session of its own (a transaction pooler, no direct URL). The row is
 * keyed by the same number as the advisory lock of a directly connected worker
 * (worker_lock_seq), which its claims record; the hand-back (release-deliveries.ts) takes
 * an owner whose row is older than the threshold as gone. Every statement is one short
 * transaction on the pool: nothing is left on a server session.
 */
import { namedSql } from "../db/named-sql.ts";
import type { Queryable } from "../db/pool.ts";

// now() of the database, never this machine's clock: the checkers compare with theirs.
const BEAT_SQL = namedSql<{ lock: number; workerId: string }>(`
insert into worker_heartbeats (worker_lock, worker_id, beat_at)
values ($lock::int, $workerId::text, now())
on conflict (worker_lock) do update set worker_id = excluded.worker_id, beat_at = now()`);

/** Writes this worker's heartbeat (its row is created by the first one). */
export async function beat(db: Queryable, lock: number, workerId: string): Promise<void> {
  await db.query(BEAT_SQL.query({ lock, workerId }));
}

/** Removes the row at a normal exit: the number's remaining claims (if any) come back. */
export async function endBeats(db: Queryable, lock: number): Promise<void> {
  await db.query("delete from worker_heartbeats where worker_lock = $1::int", [lock]);
}

/** Rows not written for an hour (workers that crashed): no claim of theirs is left. */
export async function purgeOldHeartbeats(db: Queryable): Promise<number> {
  const { rowCount } = await db.query(
    "delete from worker_heartbeats where beat_at < now() - interval '1 hour'",
  );
  return rowCount ?? 0;
}
