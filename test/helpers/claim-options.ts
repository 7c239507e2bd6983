/**
 * The options of a test's own claim (claimDeliveries with no worker running): worker "w",
 * no liveness lock, a fresh claim token, up to 100 rows, a 30 s lease margin.
 */
import { randomUUID } from "node:crypto";
import type { ClaimOptions } from "../../src/queue/claim-deliveries.ts";

export const claimOptions = (over: Partial<ClaimOptions> = {}): ClaimOptions => ({
  workerId: "w",
  workerLock: null,
  claimToken: randomUUID(),
  limit: 100,
  defaultMaxInFlight: 20,
  defaultTimeoutMs: 1_000,
  leaseMarginMs: 30_000,
  ...over,
});
