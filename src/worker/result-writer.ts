/**
 * Collects attempt results and writes them back in batches: as soon as `flushBatch` are
 * waiting, or `flushIntervalMs` after the first one arrived. One write at a time; results
 * that arrive during a write go into the next one.
 *
 * A failed write (the database restarting, failing over) is retried after a backoff with
 * jitter; its rows stay in_flight under their lease meanwhile, so nothing is lost if the
 * process dies. A result whose lease has ended is not retried any more: it is logged and
 * dropped, and the lease expiry hands its row back to be sent again (the claim-token guard
 * of record-results.ts would discard it once another worker holds the row anyway). See
 * docs/reliability.md.
 */
import type { HealthConfig } from "../config.ts";
import type { Pool } from "../db/pool.ts";
import { isDatabaseUnavailable } from "../db/unavailable.ts";
import { ErrorKind } from "../delivery/retry-policy.ts";
import { makeBackoff } from "../lib/backoff.ts";
import type { Logger } from "../logger.ts";
import type { OperationalTarget } from "../queue/operational-events.ts";
import { type DeliveryResult, recordResults } from "../queue/record-results.ts";

export interface ResultWriter {
  /** `leaseEndsAt`: performance.now() at which the row's lease ends (default: never) */
  add(result: DeliveryResult, leaseEndsAt?: number): void;
  /** Writes everything waiting, including results added while it runs. */
  flush(): Promise<void>;
  readonly waiting: number;
}

interface Queued {
  result: DeliveryResult;
  leaseEndsAt: number;
}

export function makeResultWriter(options: {
  pool: Pool;
  logger: Logger;
  flushBatch: number;
  flushIntervalMs: number;
  health: HealthConfig;
  /** where the operational events the results raise go (null: none) */
  operational?: OperationalTarget | null;
  onWritten?: (results: DeliveryResult[]) => void;
  /** retry waits after a failed write: from baseMs (default 100) up to capMs (default 5_000) */
  retry?: { baseMs?: number; capMs?: number };
  /** monotonic clock in ms (tests) */
  now?: () => number;
}): ResultWriter {
  const now = options.now ?? (() => performance.now());
  const backoff = makeBackoff(options.retry);
  let queue: Queued[] = [];
  let timer: NodeJS.Timeout | null = null;
  let writing: Promise<void> | null = null;

  async function writeOnce(): Promise<void> {
    const batch = queue;
    queue = [];
    if (batch.length === 0) return;
    const results = batch.map((q) => q.result);
    try {
      await recordResults(options.pool, results, options.health, options.operational ?? null);
      if (backoff.failures > 0)
        options.logger.info({ failures: backoff.failures }, "writing results works again");
      backoff.reset();
      const gone = [
        ...new Set(results.filter((r) => r.errorKind === ErrorKind.gone).map((r) => r.endpointId)),
      ];
      if (gone.length > 0)
        options.logger.warn({ endpoints: gone }, "endpoints answered 410 Gone and were disabled");
      options.onWritten?.(results);
    } catch (err) {
      const at = now();
      const kept = batch.filter((q) => q.leaseEndsAt > at);
      const expired = batch.length - kept.length;
      const waitMs = backoff.next();
      options.logger[isDatabaseUnavailable(err) ? "warn" : "error"](
        { err, count: kept.length, waitMs },
        "writing results failed; will retry",
      );
      if (expired > 0) {
        options.logger.error(
          {
            count: expired,
            deliveries: batch
              .filter((q) => q.leaseEndsAt <= at)
              .map((q) => q.result.deliveryId)
              .slice(0, 20),
          },
          "results not written before their lease ended: dropped; the lease expiry sends those deliveries again",
        );
      }
      queue = kept.concat(queue);
      await new Promise((r) => setTimeout(r, waitMs));
    }
  }

  function kick(): Promise<void> {
    if (timer) {
      clearTimeout(timer);
      timer = null;
    }
    if (!writing) {
      writing = (async () => {
        try {
          while (queue.length > 0) await writeOnce();
        } finally {
          writing = null;
        }
      })();
    }
    return writing;
  }

  return {
    add(result, leaseEndsAt = Number.POSITIVE_INFINITY) {
      queue.push({ result, leaseEndsAt });
      if (queue.length >= options.flushBatch) void kick();
      else if (!timer && !writing) timer = setTimeout(kick, options.flushIntervalMs);
    },
    async flush() {
      while (queue.length > 0 || writing) await kick();
    },
    get waiting() {
      return queue.length;
    },
  };
}
