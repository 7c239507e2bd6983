/**
 * Where a message's rows are (docs/history.md, "Messages and deliveries"): messages and
 * deliveries are partitioned by message_ms, the millisecond the message id carries
 * (hookrelay_message_ms, migration 0034), 0 for rows written before the layout. A lookup by
 * message id that says so reads the id's period (or the default partition, where no period
 * covers it: rows not moved yet, a dropped period's held rows) and the legacy partition,
 * never every day: PostgreSQL prunes the others when the plan starts, a generic plan too.
 */

/** `alias.message_ms` in the partitions that can hold rows of message `idSql`. */
export function messageMsOf(alias: string, idSql: string): string {
  const column = alias === "" ? "message_ms" : `${alias}.message_ms`;
  return `${column} in (hookrelay_message_ms(${idSql}), 0)`;
}
