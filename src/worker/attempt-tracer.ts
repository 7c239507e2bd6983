/**
 * Each attempt's trace span (docs/telemetry.md, "Traces"), as the worker sees it: started just
 * before the attempt is prepared, so its span context can travel in the request, and ended
 * with the outcome. ops/tracing.ts implements it over the OpenTelemetry SDK when tracing is
 * on; `NO_TRACING` records nothing and only hands an endpoint that propagates the trace a
 * child of the message's traceparent. Called on the worker's path: cheap, never throws.
 */
import type { AttemptOutcome } from "../domain/attempt-outcome.ts";
import { childTraceparent } from "../lib/traceparent.ts";
import type { ClaimedDelivery } from "../queue/claim-deliveries.ts";

export interface AttemptSpan {
  /** the attempt's span context as a traceparent (what the receiver gets); null: none */
  readonly traceparent: string | null;
  /** ends the span with the attempt's outcome; null: no attempt was recorded (drained, crashed) */
  end(outcome: AttemptOutcome | null): void;
}

export interface AttemptTracer {
  /** the span of one attempt of `delivery`; null: nothing to record or send */
  start(delivery: ClaimedDelivery): AttemptSpan | null;
}

/** Tracing off: nothing is recorded; a propagating endpoint still continues the producer's trace. */
export const NO_TRACING: AttemptTracer = {
  start(delivery) {
    if (!delivery.propagateTrace || !delivery.traceparent) return null;
    const traceparent = childTraceparent(delivery.traceparent);
    return traceparent === null ? null : { traceparent, end() {} };
  },
};
