/**
 * Group commit for API ingest: messages accepted by concurrent requests are written
 * together, many per statement and transaction, so they share one WAL flush instead of
 * paying one each (with fsync at several ms, one commit per message caps ingest at a few
 * hundred per second). While a batch is being written the next one fills up; a request
 * waits at most for the batch in front of it. Each message is still committed, with all
 * its deliveries, before its request is answered (docs/delivery.md, Durable acceptance),
 * and the workers are woken by the commit itself. The statement is enqueue-message.ts's.
 *
 * If a batch fails, its messages are retried one by one, so one bad message (say, its app
 * was just deleted) fails alone. If it failed because the database is unreachable (a
 * restart, a failover: db/unavailable.ts), every request of the batch is rejected with that
 * error at once, which the API answers 503: the commit may or may not have happened, and a
 * message is never acknowledged unless its commit was seen (docs/reliability.md).
 *
 * When a write cannot keep up (`secondWriterAt` or more messages wait behind it), a second
 * write starts beside it on another connection, so PostgreSQL's second core works on one
 * batch while the first commits; it stops once the queue is short again, so batches stay
 * large. With 64 clients back to back it raised ingest in each of five alternating pairs
 * of runs here (median +10%), for up to 10% more database CPU per message
 * (docs/performance.md).
 *
 * Lifecycle: `enqueue` is refused until `start()` and after `stop()`; `stop()` waits until
 * every message accepted before it is written (or has failed). Both are safe to call twice.
 */
import type { WhileDisabled } from "../config.ts";
import type { Pool } from "../db/pool.ts";
import { isDatabaseUnavailable } from "../db/unavailable.ts";
import { HookRelayError } from "../errors.ts";
import {
  type EnqueueResult,
  enqueueMessage,
  type NewMessage,
  writeMessages,
} from "./enqueue-message.ts";

export interface EnqueueBatcher {
  /** accepts messages from now on */
  start(): void;
  /** refuses new messages and resolves once every accepted one is written or failed */
  stop(): Promise<void>;
  enqueue(message: NewMessage): Promise<EnqueueResult>;
}

interface Waiting {
  message: NewMessage;
  resolve(result: EnqueueResult): void;
  reject(err: unknown): void;
}

export function makeEnqueueBatcher(
  pool: Pool,
  defaultMaxAttempts: number,
  {
    maxBatch = 500,
    secondWriterAt = 16,
    whileDisabled = "hold",
  }: {
    maxBatch?: number;
    secondWriterAt?: number;
    /** the process default for disabled endpoints (HOOKRELAY_WHILE_DISABLED) */
    whileDisabled?: WhileDisabled;
  } = {},
): EnqueueBatcher {
  let queue: Waiting[] = [];
  let writers = 0;
  let accepting = false;
  // messages accepted and not yet answered, and who waits for that to reach 0 (stop)
  let unanswered = 0;
  const idle: Array<() => void> = [];

  function answered(): void {
    unanswered--;
    if (unanswered === 0) for (const resolve of idle.splice(0)) resolve();
  }

  async function writeBatch(batch: Waiting[]): Promise<void> {
    const results = await writeMessages(
      pool,
      batch.map((w) => w.message),
      defaultMaxAttempts,
      { whileDisabled },
    );
    for (const [i, w] of batch.entries()) {
      const result = results[i] ?? new Error("no answer for the message");
      if (result instanceof Error) w.reject(result);
      else w.resolve(result);
    }
  }

  function startWriter(): void {
    if (writers === 0 ? queue.length > 0 : writers === 1 && queue.length >= secondWriterAt)
      void drain();
  }

  async function drain(): Promise<void> {
    writers++;
    try {
      // a writer alone drains the queue; the second one only works off a long queue
      while (queue.length > 0 && (writers === 1 || queue.length >= secondWriterAt)) {
        const batch = queue.slice(0, maxBatch);
        queue = queue.slice(batch.length);
        try {
          await writeBatch(batch);
        } catch (err) {
          if (isDatabaseUnavailable(err)) {
            for (const w of batch) w.reject(err);
            continue;
          }
          // One by one: only the message that cannot be written fails.
          for (const w of batch) {
            enqueueMessage(pool, w.message, defaultMaxAttempts, { whileDisabled }).then(
              w.resolve,
              w.reject,
            );
          }
        }
      }
    } finally {
      writers--;
      startWriter();
    }
  }

  return {
    start() {
      accepting = true;
    },
    stop() {
      accepting = false;
      if (unanswered === 0) return Promise.resolve();
      return new Promise<void>((resolve) => idle.push(resolve));
    },
    enqueue(message) {
      if (!accepting) {
        return Promise.reject(
          new HookRelayError("not_running", "the enqueue batcher is not running"),
        );
      }
      unanswered++;
      return new Promise<EnqueueResult>((resolve, reject) => {
        queue.push({
          message,
          resolve(result) {
            answered();
            resolve(result);
          },
          reject(err) {
            answered();
            reject(err);
          },
        });
        startWriter();
      });
    },
  };
}
