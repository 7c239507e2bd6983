/**
 * The time a statement takes as "now": the `$now` parameter when its caller gives one (a
 * test's clock, so tests move time forward instead of sleeping or back-dating rows), else
 * the database's now() (the transaction's start), which is what production always passes
 * null for. One name, one parameter: every use in a statement reads the same instant.
 */
export const NOW_SQL = "coalesce($now::timestamptz, now())";

/** What a statement that reads NOW_SQL binds: null is the database's clock. */
export interface NowParam {
  now: Date | null;
}

/**
 * A worker's or a maintenance task's clock for its statements: the time to use, or null
 * for the database's own (production).
 */
export type SqlClock = () => Date | null;

/** The production clock: the database's now(). */
export const DATABASE_CLOCK: SqlClock = () => null;
