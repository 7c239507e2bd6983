/**
 * An endpoint's rows in flight across all workers, in SQL (an integer): the rows claimed
 * from it (endpoint_claim_state `c`, which claims add to) less those released (its
 * endpoint_health row `h`, which result writes and hand-backs add to), migration 0041.
 */
export const inFlightSql = (c: string, h: string) =>
  `greatest(${c}.claimed - ${h}.released, 0)::int`;
