/**
 * The ordering key a new delivery row is written with (docs/delivery.md, "Ordering"): the
 * empty string for a FIFO endpoint (its one key: no message's key can be empty), else its
 * message's key (null: unordered). Every statement that inserts delivery rows for messages
 * uses it: the fan-out, and a replay's or resend's row for an endpoint the message had none for.
 *
 * @param endpoint the endpoints row's alias
 * @param messageKey an SQL expression of the message's ordering_key
 */
export const orderingKeySql = (endpoint: string, messageKey: string): string =>
  `case when ${endpoint}.ordering = 'fifo' then '' else ${messageKey} end`;
