/**
 * Collects attempt results and writes them back in batches: as soon as `flushBatch` are
 * waiting, or `flushIntervalMs` after the first one arrived. One write at a time; results
 * that arrive during a write go into the next one.
 *
 * A result PostgreSQL refuses (a row that cannot be written) never holds back the rest:
 * the batch is split until that row is alone (db/write-isolating.ts), the others are
 * written at once, and it is written in a safe form (docs/reliability.md, Poison rows).
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
import { DATABASE_CLOCK, type SqlClock } from "../db/sql/clock.ts";
import { asciiText } from "../db/storable-text.ts";
import { isDatabaseUnavailable } from "../db/unavailable.ts";
import { isWorthRetryingWhole, UnwrittenRowsError, writeIsolating } from "../db/write-isolating.ts";
import type { OperationalTarget } from "../domain/operational-events.ts";
import { ErrorKind } from "../domain/retry-policy.ts";
import { makeBackoff } from "../lib/backoff.ts";
import type { Logger } from "../logger.ts";
import type { UnwrittenResults } from "../queue/claim-deliveries.ts";
import { type DeliveryResult, recordResults } from "../queue/record-results.ts";

export interface ResultWriter {
  /** `leaseEndsAt`: performance.now() at which the row's lease ends (default: never) */
  add(result: DeliveryResult, leaseEndsAt?: number): void;
  /** Writes everything waiting, including results added while it runs. */
  flush(): Promise<void>;
  readonly waiting: number;
  /**
   * The successful results not written yet (a probe's aside), counted per endpoint, those
   * of the write under way apart, with their claims' tokens: rows whose answer is known but
   * that still count in flight in the database, which the next claim counts as free room
   * (docs/delivery.md, "Room freed by answers not yet written").
   */
  unwritten(): UnwrittenResults;
  /** results PostgreSQL refused as they were, written in a safe form since the start */
  readonly poisoned: number;
  /** results refused even in that form, dropped (their leases send them again) */
  readonly dropped: number;
}

interface Queued {
  result: DeliveryResult;
  leaseEndsAt: number;
  /**
   * back from a failed write, which may have committed all the same (a connection lost
   * before its answer came): left out of `unwritten()`, as a row that may be released
   */
  retried?: boolean;
}

export function makeResultWriter(options: {
  pool: Pool;
  logger: Logger;
  flushBatch: number;
  flushIntervalMs: number;
  health: HealthConfig;
  /** maxInFlight of endpoints without their own: the adaptive limit grows up to it */
  defaultMaxInFlight?: number;
  /** where the operational events the results raise go (null: none) */
  operational?: OperationalTarget | null;
  onWritten?: (results: DeliveryResult[]) => void;
  /** retry waits after a failed write: from baseMs (default 100) up to capMs (default 5_000) */
  retry?: { baseMs?: number; capMs?: number };
  /** monotonic clock in ms (tests) */
  now?: () => number;
  /** the write's "now" in SQL (db/sql/clock.ts); default the database's now() */
  sqlClock?: SqlClock;
}): ResultWriter {
  const now = options.now ?? (() => performance.now());
  const sqlClock = options.sqlClock ?? DATABASE_CLOCK;
  const write = (results: DeliveryResult[]) =>
    recordResults(
      options.pool,
      results,
      options.health,
      options.operational ?? null,
      sqlClock(),
      options.defaultMaxInFlight,
    );
  const backoff = makeBackoff(options.retry);
  let queue: Queued[] = [];
  let timer: NodeJS.Timeout | null = null;
  let writing: Promise<void> | null = null;
  // the batch of the write under way while it goes out whole, as one transaction (null once
  // a failure splits it): its rows are released all at once or not at all
  let wholeWrite: Queued[] | null = null;
  // results written in a safe form, and results dropped as unwritable (see writeSafeForm)
  let poisoned = 0;
  let dropped = 0;

  /**
   * The last resort for a result PostgreSQL refused: its stranger texts as plain ASCII and
   * its response body replaced by a note. If even that is refused, the result is logged and
   * dropped (the lease expiry sends its delivery again); it never blocks the others.
   */
  async function writeSafeForm(result: DeliveryResult, err: unknown): Promise<void> {
    const code = (err as { code?: unknown }).code;
    const safe: DeliveryResult = {
      ...result,
      error: asciiText(result.error),
      responseBody: `[response body not stored: the database refused it${typeof code === "string" ? ` (${asciiText(code, 16)})` : ""}]`,
      url: asciiText(result.url, 4096) ?? "",
      statusCode: withinInteger(result.statusCode, 0, 999),
      latencyMs: withinInteger(result.latencyMs, 0, 2 ** 31 - 1) ?? 0,
    };
    options.logger.error(
      { err, delivery: result.deliveryId, endpoint: result.endpointId },
      "a result could not be written as it was; writing it in a safe form",
    );
    try {
      await write([safe]);
      poisoned++;
    } catch (again) {
      if (isWorthRetryingWhole(again)) throw again;
      dropped++;
      options.logger.error(
        { err: again, delivery: result.deliveryId, endpoint: result.endpointId },
        "a result could not be written even in a safe form: dropped; the lease expiry sends its delivery again",
      );
    }
  }

  async function writeOnce(): Promise<void> {
    const batch = queue;
    queue = [];
    if (batch.length === 0) return;
    const written: DeliveryResult[] = [];
    try {
      wholeWrite = batch;
      await writeIsolating(
        batch,
        async (rows) => {
          if (rows.length !== batch.length) wholeWrite = null;
          const results = rows.map((q) => q.result);
          await write(results);
          written.push(...results);
        },
        (q, err) => writeSafeForm(q.result, err),
      );
      if (backoff.failures > 0)
        options.logger.info({ failures: backoff.failures }, "writing results works again");
      backoff.reset();
    } catch (err) {
      const unwritten = err instanceof UnwrittenRowsError ? (err.rows as Queued[]) : batch;
      const at = now();
      const kept = unwritten.filter((q) => q.leaseEndsAt > at);
      const expired = unwritten.filter((q) => q.leaseEndsAt <= at);
      const waitMs = backoff.next();
      options.logger[isDatabaseUnavailable(err) ? "warn" : "error"](
        { err, count: kept.length, waitMs },
        "writing results failed; will retry",
      );
      if (expired.length > 0) {
        options.logger.error(
          {
            count: expired.length,
            deliveries: expired.map((q) => q.result.deliveryId).slice(0, 20),
          },
          "results not written before their lease ended: dropped; the lease expiry sends those deliveries again",
        );
      }
      for (const q of kept) q.retried = true;
      queue = kept.concat(queue);
      await new Promise((r) => setTimeout(r, waitMs));
    } finally {
      wholeWrite = null;
      if (written.length > 0) afterWrite(written);
    }
  }

  function afterWrite(results: DeliveryResult[]): void {
    const gone = [
      ...new Set(results.filter((r) => r.errorKind === ErrorKind.gone).map((r) => r.endpointId)),
    ];
    if (gone.length > 0)
      options.logger.warn({ endpoints: gone }, "endpoints answered 410 Gone and were disabled");
    options.onWritten?.(results);
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
    unwritten() {
      const out: UnwrittenResults = {
        endpointIds: [],
        counts: [],
        inWrite: [],
        claimTokens: [],
        witness: null,
      };
      const tokens = new Set<string>();
      const count = (entries: Queued[], inWrite: boolean) => {
        const perEndpoint = new Map<string, number>();
        for (const { result: r, retried } of entries) {
          // a failure's effects (a pause, the circuit, a cut limit) come with its write:
          // until then its room stays taken, as do a probe's and a retried write's
          if (retried || !r.success || r.isProbe) continue;
          perEndpoint.set(r.endpointId, (perEndpoint.get(r.endpointId) ?? 0) + 1);
          tokens.add(r.claimToken);
        }
        for (const [endpointId, n] of perEndpoint) {
          out.endpointIds.push(endpointId);
          out.counts.push(n);
          out.inWrite.push(inWrite);
        }
      };
      count(queue, false);
      if (wholeWrite && wholeWrite.length > 0) {
        count(wholeWrite, true);
        const w = wholeWrite[0]!.result;
        out.witness = {
          deliveryId: w.deliveryId,
          messageMs: w.messageMs,
          claimToken: w.claimToken,
        };
      }
      out.claimTokens = [...tokens];
      return out;
    },
    get poisoned() {
      return poisoned;
    },
    get dropped() {
      return dropped;
    },
  };
}

/** `value` if it is an integer within [min, max], else null. */
function withinInteger(value: number | null, min: number, max: number): number | null {
  return value !== null && Number.isInteger(value) && value >= min && value <= max ? value : null;
}
