/**
 * OpenTelemetry traces (docs/telemetry.md, "Traces"): a span for each message accepted (the
 * ingest) and for each attempt, exported over OTLP/HTTP. Off unless an OTLP endpoint is
 * configured (tracing-config.ts); off, the SDK is never loaded (tracing-sdk.ts is imported
 * only when it is on) and a message costs one check of its producer's traceparent.
 *
 * Whether on or off, a producer's traceparent (the API's `traceparent` header, the
 * library's option) is checked: a malformed one is ignored and counted
 * (hookrelay_traceparent_malformed_total). The message stores the context its deliveries
 * continue: the ingest span's when tracing is on, else the producer's.
 */

import { formatTraceparent, parseTraceparent } from "../lib/traceparent.ts";
import type { Logger } from "../logger.ts";
import type { TracingConfig } from "../tracing-config.ts";
import { type AttemptTracer, NO_TRACING } from "../worker/attempt-tracer.ts";
import type { TracingCounters } from "./metrics.ts";

/** The span of one message's ingest. */
export interface IngestSpan {
  /** the context the message's deliveries continue (stored with it); null: none */
  readonly traceparent: string | null;
  /** ends the span: the message written (its id), or what failed */
  end(messageId: string | null, error?: unknown): void;
}

export interface Tracing {
  /** spans are recorded and exported */
  readonly enabled: boolean;
  /** A producer's traceparent in version-00 form; null when absent, or malformed (counted). */
  producerParent(header: unknown): string | null;
  /** Starts the ingest span of one message, a child of the producer's context if any. */
  startIngest(attributes: { appId: string; eventType: string }, parent: string | null): IngestSpan;
  /** the worker's attempt spans */
  readonly attempts: AttemptTracer;
  /** Exports what is queued (each export bounded by its timeout), then stops. Idempotent. */
  shutdown(): Promise<void>;
}

const NOT_COUNTED: Pick<TracingCounters, "malformedTraceparent"> = {
  malformedTraceparent() {},
};

/** The producer's traceparent, checked: version-00 text, or null (a malformed one counted). */
export function checkProducerParent(
  header: unknown,
  counters: Pick<TracingCounters, "malformedTraceparent"> = NOT_COUNTED,
): string | null {
  if (header === undefined || header === null || header === "") return null;
  const parsed = parseTraceparent(header);
  if (parsed === null) {
    counters.malformedTraceparent();
    return null;
  }
  return formatTraceparent(parsed);
}

const noEnd = () => {};

/** Tracing off: nothing recorded, the producer's context stored as given. */
export function makeDisabledTracing(
  counters?: Pick<TracingCounters, "malformedTraceparent">,
): Tracing {
  return {
    enabled: false,
    producerParent: (header) => checkProducerParent(header, counters),
    startIngest: (_attributes, parent) => ({ traceparent: parent, end: noEnd }),
    attempts: NO_TRACING,
    shutdown: async () => {},
  };
}

/**
 * Tracing as configured: the SDK's (loaded now) when `config` is given, else off. A failure
 * to load or set up the SDK is logged and leaves tracing off: telemetry never stops delivery.
 */
export async function makeTracing(
  config: TracingConfig | null,
  counters: TracingCounters,
  logger: Pick<Logger, "info" | "error">,
): Promise<Tracing> {
  if (config === null) return makeDisabledTracing(counters);
  try {
    const { makeSdkTracing } = await import("./tracing-sdk.ts");
    const tracing = makeSdkTracing(config, counters);
    logger.info(
      { url: config.url, protocol: config.protocol, sampler: config.sampler },
      "tracing on: spans go to the OTLP endpoint",
    );
    return tracing;
  } catch (err) {
    logger.error({ err }, "tracing could not be set up; it stays off");
    return makeDisabledTracing(counters);
  }
}
