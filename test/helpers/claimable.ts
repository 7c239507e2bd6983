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

type ClaimHarness = { db: { pool: Pool }; config: Pick<Config, "delivery" | "worker"> };

/** A worker's claim options over the harness's config: up to 1,000 rows, a fresh token. */
export function claimOptions(h: ClaimHarness, workerId: string) {
  return {
    workerId,
    workerLock: null,
    claimToken: randomUUID(),
    limit: 1_000,
    defaultMaxInFlight: h.config.delivery.maxInFlight,
    defaultTimeoutMs: h.config.delivery.timeoutMs,
    leaseMarginMs: h.config.worker.leaseMarginMs,
  };
}

/** The ids of `endpointId`'s rows a claim at `now` (null: the database's now()) would take. */
export async function claimableAt(
  h: ClaimHarness,
  endpointId: string,
  now: Date | null = null,
): Promise<string[]> {
  let ids: string[] = [];
  await withTransaction(h.db.pool, async (client) => {
    const rows = await claimDeliveries(client, { ...claimOptions(h, "claimable-at"), now });
    ids = rows.filter((r) => r.endpointId === endpointId).map((r) => String(r.id));
    throw new RolledBack();
  }).catch((err: unknown) => {
    if (!(err instanceof RolledBack)) throw err;
  });
  return ids;
}
