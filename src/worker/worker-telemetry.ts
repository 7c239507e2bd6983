/**
 * What a worker reports as it runs, in one interface (metrics implement it: ops/metrics.ts's
 * `worker`; tests may pass their own). Every method is called on the worker's own path, so
 * an implementation must be cheap and must not throw.
 */
import type { DeliveryResult } from "../queue/record-results.ts";

export interface WorkerTelemetry {
  /** a claim took `size` rows (never called for an empty claim) */
  claimed(size: number): void;
  /** a batch of results was written (stale ones included: their attempts happened) */
  written(results: readonly DeliveryResult[]): void;
}

/** Reports nothing (a worker without metrics). */
export const NO_TELEMETRY: WorkerTelemetry = {
  claimed() {},
  written() {},
};
