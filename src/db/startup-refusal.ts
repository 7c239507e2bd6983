/**
 * Database refusals at start made into one sentence (docs/database.md): a role without a
 * right hookrelay needs is a configuration to fix, not a stack trace. Anything else is
 * returned as it is.
 */
import { DatabaseError } from "../errors.ts";

export function startupRefusal(err: unknown): unknown {
  const code = (err as { code?: unknown } | null)?.code;
  if (code === "42501") {
    return new DatabaseError(
      `the database role lacks a right hookrelay needs (${(err as Error).message}): grant it the rights docs/database.md lists, or run hookrelay migrate with a role that has them`,
      { cause: err },
    );
  }
  return err;
}
