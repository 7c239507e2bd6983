import { expect } from "vitest";
import type { Pool } from "../../src/db/pool.ts";
import { waitFor } from "./receiver.ts";

/** Once nothing is in flight any more, every endpoint's in-flight counter is back at 0. */
export async function expectNoInFlightCounters(pool: Pool): Promise<void> {
  await waitFor(
    async () =>
      (await pool.query("select 1 from deliveries where status = 'in_flight' limit 1")).rows
        .length === 0,
    30_000,
    "nothing in flight",
  );
  const { rows } = await pool.query(
    `select c.endpoint_id, c.claimed - h.released as in_flight
     from endpoint_claim_state c join endpoint_health h on h.endpoint_id = c.endpoint_id
     where c.claimed <> h.released`,
  );
  expect(rows).toEqual([]);
}

/**
 * SQL: the rows in flight of the endpoint whose id is `endpointId` (an SQL expression), as
 * the claim counts them: claimed less released (migration 0041).
 */
export const inFlightOf = (endpointId: string) =>
  `(select (if_c.claimed - if_h.released)::int
    from endpoint_claim_state if_c join endpoint_health if_h on if_h.endpoint_id = if_c.endpoint_id
    where if_c.endpoint_id = ${endpointId})`;

/** Sets the in-flight count of the endpoints `endpointIds` (all: null) to `n`, as a claim would read it. */
export async function setInFlight(
  pool: Pick<Pool, "query">,
  endpointIds: string[] | null,
  n: number,
): Promise<void> {
  await pool.query(
    `update endpoint_claim_state c set claimed = h.released + $2::int
     from endpoint_health h
     where h.endpoint_id = c.endpoint_id and ($1::text[] is null or c.endpoint_id = any ($1::text[]))`,
    [endpointIds, n],
  );
}
