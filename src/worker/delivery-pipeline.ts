/**
 * The delivery pipeline: each claimed row goes prepare → send → record, on its own, as soon
 * as it is claimed. The transport (delivery/transport.ts, picked by the endpoint's
 * destination kind) prepares and sends; the attempt recorder (record-attempt.ts) turns the
 * outcome into a result for the result writer. How many run at once is the claim loop's
 * business (claim-loop.ts claims only for free slots; the claim respects each endpoint's
 * in-flight limit).
 *
 * It keeps the rows in flight with their claim token, abort handle and lease end, and per
 * claim how many rows still have no result: the last one's result ends the claim's lease
 * (`finishesClaim`). `abandon()` is the drain's (drain.ts): every attempt still running is
 * aborted and marked released, so its result is never recorded and its row is handed back.
 *
 * Each attempt has a trace span (attempt-tracer.ts), started before prepare so that an
 * endpoint that propagates the trace gets the span's traceparent in its request, and ended
 * with the outcome (none for a released or crashed attempt).
 */
import { type AbortHandle, type TransportRegistry, transportFor } from "../delivery/transport.ts";
import type { AttemptOutcome } from "../domain/attempt-outcome.ts";
import { ErrorKind } from "../domain/retry-policy.ts";
import type { Logger } from "../logger.ts";
import type { ClaimedDelivery } from "../queue/claim-deliveries.ts";
import { type AttemptTracer, NO_TRACING } from "./attempt-tracer.ts";
import type { AttemptRecorder } from "./record-attempt.ts";

export interface DeliveryPipeline {
  /**
   * Starts every row of one claim. `claimedAt`: performance.now() just before the claim was
   * sent (its lease started after it); the row's lease ends at claimedAt + its timeout +
   * the lease margin at the latest.
   */
  start(claims: readonly ClaimedDelivery[], claimToken: string, claimedAt: number): void;
  /** rows in flight (abandoned ones included until `clear()`) */
  readonly inFlight: number;
  /** performance.now() at which a row in flight's lease ends; undefined: not in flight */
  leaseEndsAt(deliveryId: number): number | undefined;
  /** Aborts every attempt still running; their results are dropped. Returns their rows. */
  abandon(): { deliveryId: number; claimToken: string }[];
  /** Forgets the abandoned rows (they were handed back). */
  clear(): void;
}

interface Running {
  claim: ClaimedDelivery;
  token: string;
  /** made by its transport as the attempt starts */
  abort: AbortHandle | null;
  /** abandoned by the drain: its row is released, not recorded */
  released: boolean;
  leaseEndsAt: number;
}

export function makeDeliveryPipeline(deps: {
  transports: TransportRegistry;
  recorder: AttemptRecorder;
  logger: Pick<Logger, "error" | "warn">;
  leaseMarginMs: number;
  /** each attempt's trace span; default NO_TRACING */
  tracer?: AttemptTracer;
  /** a row left the pipeline (a slot is free) */
  onSettled?: () => void;
}): DeliveryPipeline {
  const { transports, recorder, logger } = deps;
  const tracer = deps.tracer ?? NO_TRACING;
  const running = new Map<number, Running>();
  /** per claim token: how many of its rows have no result handed to the recorder yet */
  const openClaims = new Map<string, number>();

  /** Counts one more row of a claim as done; true for its last one. */
  function finishOne(token: string): boolean {
    const left = (openClaims.get(token) ?? 1) - 1;
    if (left > 0) {
      openClaims.set(token, left);
      return false;
    }
    openClaims.delete(token);
    return true;
  }

  async function deliver(entry: Running): Promise<void> {
    const { claim } = entry;
    // what the span ends with: stays null unless an outcome is recorded
    let traced: AttemptOutcome | null = null;
    const span = tracer.start(claim);
    if (span !== null && claim.propagateTrace) claim.sendTraceparent = span.traceparent;
    try {
      const transport = transportFor(transports, claim);
      const abort = transport.newAbort();
      entry.abort = abort;
      const prepared = transport.prepare(claim);
      if (!prepared.ok) {
        // Nothing can be sent: a secret sealed under a key this process lacks (retried with
        // backoff, then dead-lettered), or a payload without a field the target needs (a
        // dead letter). Recorded as an attempt, so the operator sees it and no row circles
        // through lease expiries forever. (The error names the field, never its value.)
        const signing = prepared.outcome.errorKind === ErrorKind.signing;
        logger[signing ? "error" : "warn"](
          { err: prepared.error, endpointId: claim.endpointId, deliveryId: claim.id },
          prepared.note,
        );
        traced = prepared.outcome;
        recorder.record(claim, entry.token, prepared.outcome, finishOne(entry.token));
        return;
      }
      const outcome = await transport.send(prepared.request, abort);
      // Aborted by the drain deadline: released by the drain, not counted as an attempt.
      if (entry.released) return;
      traced = outcome;
      recorder.record(claim, entry.token, outcome, finishOne(entry.token), prepared.shown);
    } catch (err) {
      logger.error({ err, deliveryId: claim.id }, "delivery crashed; its lease will bring it back");
    } finally {
      span?.end(traced);
      if (!entry.released) running.delete(claim.id);
      deps.onSettled?.();
    }
  }

  return {
    start(claims, claimToken, claimedAt) {
      if (claims.length === 0) return;
      openClaims.set(claimToken, claims.length);
      for (const claim of claims) {
        const entry: Running = {
          claim,
          token: claimToken,
          abort: null,
          released: false,
          leaseEndsAt: claimedAt + claim.timeoutMs + deps.leaseMarginMs,
        };
        running.set(claim.id, entry);
        void deliver(entry);
      }
    },
    get inFlight() {
      return running.size;
    },
    leaseEndsAt(deliveryId) {
      return running.get(deliveryId)?.leaseEndsAt;
    },
    abandon() {
      const rows: { deliveryId: number; claimToken: string }[] = [];
      for (const entry of running.values()) {
        entry.released = true;
        entry.abort?.abort();
        rows.push({ deliveryId: entry.claim.id, claimToken: entry.token });
      }
      return rows;
    },
    clear() {
      running.clear();
    },
  };
}
