/**
 * A worker's drain (stop()): no more claims; requests in flight get until the drain
 * deadline (shutdownTimeoutMs) and their results are written; requests still running then
 * are aborted and their rows released (due again at once, no attempt used). If the
 * database cannot take the results, it gives up after a grace period rather than hang: the
 * rows are still leased and come back by their lease.
 */
import type { Logger } from "../logger.ts";
import type { DeliveryPipeline } from "./delivery-pipeline.ts";
import type { ResultWriter } from "./result-writer.ts";

export interface DrainSteps {
  /** stops the claim loop; resolves when it has ended */
  stopClaims(): Promise<void>;
  pipeline: Pick<DeliveryPipeline, "inFlight" | "abandon" | "clear">;
  writer: Pick<ResultWriter, "flush" | "waiting">;
  /** hands rows back (queue/release-deliveries.ts); resolves with how many were released */
  release(rows: { deliveryId: number; claimToken: string }[]): Promise<number>;
  shutdownTimeoutMs: number;
  logger: Pick<Logger, "warn" | "error">;
  /** the least time given to the last write, however late, ms (default 5_000) */
  flushGraceMs?: number;
  /** how often the in-flight count is looked at while waiting, ms (default 10) */
  checkEveryMs?: number;
}

/** Drains as above; resolves when every result is written and every unsent row released. */
export async function drain(steps: DrainSteps): Promise<void> {
  const { pipeline, writer, logger } = steps;
  const checkEveryMs = steps.checkEveryMs ?? 10;
  await steps.stopClaims();
  const deadline = Date.now() + steps.shutdownTimeoutMs;
  while (pipeline.inFlight > 0 && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, checkEveryMs));
  }
  const unfinished = pipeline.abandon();
  const flushed = await Promise.race([
    writer.flush().then(() => true),
    new Promise<false>((r) =>
      setTimeout(
        () => r(false),
        Math.max(steps.flushGraceMs ?? 5_000, deadline - Date.now()),
      ).unref(),
    ),
  ]);
  if (!flushed) {
    logger.error(
      { waiting: writer.waiting },
      "could not write results before exit; leases will retry them",
    );
    return;
  }
  if (unfinished.length > 0) {
    const released = await steps.release(unfinished);
    logger.warn({ released }, "requests still running at the drain deadline were released");
  }
  pipeline.clear();
}
