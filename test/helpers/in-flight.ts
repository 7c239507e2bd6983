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
    "select endpoint_id, in_flight from endpoint_health where in_flight <> 0",
  );
  expect(rows).toEqual([]);
}
