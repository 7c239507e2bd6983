/**
 * The SQL of a worker's liveness lock (docs/worker-liveness.md): a session-level advisory
 * lock on the pair (WORKER_LOCK_CLASS, the worker's number), held on the worker's liveness
 * connection (src/worker/liveness.ts) for as long as the process lives. Claims record the
 * number (claim-deliveries.ts); the hand-back (release-deliveries.ts) tries each claim
 * owner's lock, and one it can take belongs to a worker whose connection is gone.
 *
 * The two-integer form of the advisory lock functions has a key space of its own: the
 * single-bigint keys of the migrations and the maintenance runner never meet these.
 */
import { serverKeepaliveSettings } from "../db/keepalive.ts";
import type { Queryable } from "../db/pool.ts";

/** The first half of every worker lock's key: "hkrw" in ASCII. */
export const WORKER_LOCK_CLASS = 0x686b7277;

/**
 * The liveness session's own keepalive settings, so that PostgreSQL notices a vanished
 * worker machine within db/keepalive.ts's bound whatever the server-wide settings are
 * (they are ordinary user settings; they do nothing on a Unix socket).
 */
const SESSION_SETTINGS_SQL = `select ${Object.entries(serverKeepaliveSettings)
  .map(([name, value]) => `set_config('${name}', '${value}', false)`)
  .join(", ")}`;

export async function applyLivenessSettings(db: Queryable): Promise<void> {
  await db.query(SESSION_SETTINGS_SQL);
}

/** A worker number no other process has (worker_lock_seq, migration 0008). */
export async function nextWorkerLock(db: Queryable): Promise<number> {
  const { rows } = await db.query("select nextval('worker_lock_seq')::int as n");
  return rows[0].n;
}

/**
 * Takes the worker's lock for this session, without waiting: false while another session
 * holds it (a hand-back checking this worker right now, for a moment; or this worker's
 * previous connection, until PostgreSQL notices it is gone).
 */
export async function tryWorkerLock(db: Queryable, lock: number): Promise<boolean> {
  const { rows } = await db.query("select pg_try_advisory_lock($1::int, $2::int) as held", [
    WORKER_LOCK_CLASS,
    lock,
  ]);
  return rows[0].held;
}
