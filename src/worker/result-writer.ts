/**
 * Collects attempt results and writes them back in batches: as soon as `flushBatch` are
 * waiting, or `flushIntervalMs` after the first one arrived. One write at a time; results
 * that arrive during a write go into the next one. A failed write is retried (the rows stay
 * in_flight under their lease meanwhile, so nothing is lost if the process dies).
 */
import type { HealthConfig } from "../config.ts";
import type { Pool } from "../db/pool.ts";
import { ErrorKind } from "../delivery/retry-policy.ts";
import type { Logger } from "../logger.ts";
import type { OperationalTarget } from "../queue/operational-events.ts";
import { type DeliveryResult, recordResults } from "../queue/record-results.ts";

export interface ResultWriter {
  add(result: DeliveryResult): void;
  /** Writes everything waiting, including results added while it runs. */
  flush(): Promise<void>;
  readonly waiting: number;
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
}): ResultWriter {
  let queue: DeliveryResult[] = [];
  let timer: NodeJS.Timeout | null = null;
  let writing: Promise<void> | null = null;

  async function writeOnce(): Promise<void> {
    const batch = queue;
    queue = [];
    if (batch.length === 0) return;
    try {
      await recordResults(options.pool, batch, options.health, options.operational ?? null);
      const gone = [
        ...new Set(batch.filter((r) => r.errorKind === ErrorKind.gone).map((r) => r.endpointId)),
      ];
      if (gone.length > 0)
        options.logger.warn({ endpoints: gone }, "endpoints answered 410 Gone and were disabled");
      options.onWritten?.(batch);
    } catch (err) {
      options.logger.error({ err, count: batch.length }, "writing results failed; will retry");
      queue = batch.concat(queue);
      await new Promise((r) => setTimeout(r, 500));
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
    add(result) {
      queue.push(result);
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
