/**
 * Attempt ids carry their time (migration 0024, docs/history.md): the second they were
 * written, counted from 2020-01-01 UTC, times 2^21, plus 21 bits of a sequence. The
 * attempts table is partitioned by ranges of them, so a statement that knows a time bound
 * says it as an id bound too, and PostgreSQL reads only the partitions that can hold it.
 */

/** 2020-01-01T00:00:00Z in unix seconds: second 0 of an attempt id. */
const EPOCH_S = 1_577_836_800;
/** ids per second */
const PER_SECOND = 2 ** 21;

/**
 * The first time-carrying id (2024-01-01's): below it lies the attempts_legacy partition,
 * the rows written before attempts were partitioned (migration 0026).
 */
export const LEGACY_ATTEMPT_ID_END = 264_724_335_820_800;

/** The lowest attempt id written at `ms` (epoch ms): hookrelay_attempt_id_at in TypeScript. */
export function attemptIdAt(ms: number): number {
  return (Math.floor(ms / 1000) - EPOCH_S) * PER_SECOND;
}

/** When attempt `id` was written, to the second (epoch ms); 0 for an id older than the layout. */
export function attemptTimeOf(id: number): number {
  return id < LEGACY_ATTEMPT_ID_END ? 0 : (Math.floor(id / PER_SECOND) + EPOCH_S) * 1000;
}

/**
 * SQL: "attempt `alias` may have been written at or after `timeSql`", as an id bound the
 * planner prunes partitions with; the legacy partition's rows (no time in their ids) always
 * pass, and the statement's own created_at or started_at bound decides for them. An
 * attempt's id is never older than its created_at (both come from the same now()).
 */
export function attemptsSinceSql(alias: string, timeSql: string): string {
  return `(${alias}.id >= hookrelay_attempt_id_at(${timeSql}) or ${alias}.id < ${LEGACY_ATTEMPT_ID_END})`;
}
