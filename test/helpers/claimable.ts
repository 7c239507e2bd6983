/**
 * What a worker's claim would take at a given time, without taking it: the claim statement
 * itself (src/queue/claim-deliveries.ts) at its `now` (src/db/sql/clock.ts), in a
 * transaction that is rolled back. A test asks it instead of sleeping to see that a worker
 * sends nothing (an open circuit, a pause, a lease not yet run out).
 */
import { randomUUID } from "node:crypto";
import type { Config } from "../../src/config.ts";
import { type Pool, withTransaction } from "../../src/db/pool.ts";
import { claimDeliveries } from "../../src/queue/claim-deliveries.ts";

class RolledBack extends Error {}

/** The ids of `endpointId`'s rows a claim at `now` (null: the database's now()) would take. */
export async function claimableAt(
  h: { db: { pool: Pool }; config: Pick<Config, "delivery" | "worker"> },
  endpointId: string,
  now: Date | null = null,
): Promise<string[]> {
  let ids: string[] = [];
  await withTransaction(h.db.pool, async (client) => {
    const rows = await claimDeliveries(client, {
      workerId: "claimable-at",
      workerLock: null,
      claimToken: randomUUID(),
      limit: 1_000,
      defaultMaxInFlight: h.config.delivery.maxInFlight,
      defaultTimeoutMs: h.config.delivery.timeoutMs,
      leaseMarginMs: h.config.worker.leaseMarginMs,
      now,
    });
    ids = rows.filter((r) => r.endpointId === endpointId).map((r) => String(r.id));
    throw new RolledBack();
  }).catch((err: unknown) => {
    if (!(err instanceof RolledBack)) throw err;
  });
  return ids;
}
