/**
 * Batched writes that one bad row cannot hold back (docs/reliability.md, Poison rows).
 *
 * A batch goes out as one statement. When that statement fails on its own merits (a value
 * PostgreSQL refuses, a constraint), not because the database is away, the batch is split
 * in halves and each half written again, down to the single rows that fail: k bad rows
 * among n cost about 2k·log2(n) extra statements, every good row is written within that
 * one pass, and each bad row goes to `onRowFailed`, which writes it in a safe form or
 * records it as an error of its own. Nothing is retried in a loop.
 *
 * When the database is unreachable (db/unavailable.ts) or the statement lost a race that
 * another try would win (deadlock, serialization failure, lock or statement timeout), the
 * rows not yet written are thrown back in an UnwrittenRowsError, for the caller's own
 * retry with backoff; rows already written are not among them, so none is written twice.
 */
import { HookRelayError } from "../errors.ts";
import { isDatabaseUnavailable } from "./unavailable.ts";

/** SQLSTATEs of a statement that may well succeed as it is on another try. */
const RETRY_AS_IS = new Set([
  "40001", // serialization_failure
  "40P01", // deadlock_detected
  "55P03", // lock_not_available
  "57014", // query_canceled (statement_timeout)
]);

/** True when `err` is about the database or a race, not about the rows written. */
export function isWorthRetryingWhole(err: unknown): boolean {
  if (isDatabaseUnavailable(err)) return true;
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === "string" && RETRY_AS_IS.has(code);
}

/** The rows of a batch that were not written, and why: retry them later. */
export class UnwrittenRowsError<T> extends HookRelayError {
  readonly rows: T[];
  constructor(rows: T[], cause: unknown) {
    super("database_error", `${rows.length} rows not written: ${(cause as Error)?.message}`, {
      cause,
    });
    this.rows = rows;
  }
}

/**
 * Writes `rows` with `write` (one statement per call, all or nothing), isolating rows that
 * cannot be written; each goes to `onRowFailed(row, err)`, which must deal with it for good
 * and may throw only when the database is unreachable. Order is kept: rows are written in
 * the order given. Returns the number of statements that were made.
 */
export async function writeIsolating<T>(
  rows: readonly T[],
  write: (rows: T[]) => Promise<unknown>,
  onRowFailed: (row: T, err: unknown) => Promise<void>,
): Promise<number> {
  const pending: T[][] = rows.length > 0 ? [rows.slice()] : [];
  let statements = 0;
  while (pending.length > 0) {
    const batch = pending.shift()!;
    try {
      statements++;
      await write(batch);
    } catch (err) {
      if (isWorthRetryingWhole(err)) throw new UnwrittenRowsError(batch.concat(...pending), err);
      if (batch.length > 1) {
        const half = Math.ceil(batch.length / 2);
        pending.unshift(batch.slice(0, half), batch.slice(half));
        continue;
      }
      try {
        await onRowFailed(batch[0]!, err);
      } catch (failed) {
        throw new UnwrittenRowsError(batch.concat(...pending), failed);
      }
    }
  }
  return statements;
}
