/**
 * Where a message's rows are (docs/history.md, "Messages and deliveries"): messages and
 * deliveries are partitioned by message_ms, the millisecond the message id carries
 * (hookrelay_message_ms, migration 0034), 0 for rows written before the layout. A lookup by
 * message id that says so reads the id's period (or the default partition, where no period
 * covers it: rows not moved yet, a dropped period's held rows) and the legacy partition,
 * never every day: PostgreSQL prunes the others when the plan starts, a generic plan too.
 */
import { ID_PREFIX, idTimeMs } from "../../ids.ts";

/**
 * `alias.message_ms` in the partitions that can hold rows of message `idSql`: the
 * millisecond its id carries, the one after (rows an SQL statement wrote before migration
 * 0042, whose hookrelay_message_ms rounded a millisecond up for about one id in 20,000),
 * and 0.
 */
export function messageMsOf(alias: string, idSql: string): string {
  const column = alias === "" ? "message_ms" : `${alias}.message_ms`;
  return `${column} in (${messageMsCandidates(idSql)}, 0)`;
}

/**
 * The two milliseconds of message `idSql`, as SQL: its own and the one after, left out for
 * an id of another shape (0: the legacy partition's, read anyway), whose one after would
 * be the default partition's.
 */
export function messageMsCandidates(idSql: string): string {
  return `hookrelay_message_ms(${idSql}), nullif(hookrelay_message_ms(${idSql}), 0) + 1`;
}

/** The message_ms values messageMsOf reads for each of `ids`, as a list for `= any`. */
export function messageMsValues(ids: readonly string[]): number[] {
  const values = new Set([0]);
  for (const id of ids) {
    const ms = idTimeMs(id, ID_PREFIX.message);
    if (ms !== null) values.add(ms).add(ms + 1);
  }
  return [...values];
}
