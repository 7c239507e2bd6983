/**
 * A PostgreSQL unique violation (SQLSTATE 23505) is how the data layer says "that uid or
 * name is taken": the statement just runs, and the database's unique index decides, with
 * no race between a check and the insert. The API answers it with 409.
 */
import { conflict } from "./errors.ts";

const UNIQUE_VIOLATION = "23505";

/** True when `err` is PostgreSQL's unique violation. */
export function isUniqueViolation(err: unknown): boolean {
  return (
    typeof err === "object" && err !== null && (err as { code?: unknown }).code === UNIQUE_VIOLATION
  );
}

/**
 * A `.catch()` handler: a unique violation becomes a 409 conflict saying `detail` (with
 * the database error as its cause); anything else is thrown on unchanged.
 */
export function conflictOnUnique(detail: string): (err: unknown) => never {
  return (err) => {
    if (isUniqueViolation(err)) throw conflict(detail, { cause: err });
    throw err;
  };
}
