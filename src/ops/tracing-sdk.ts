/**
 * Tracing on: the OpenTelemetry SDK's tracer behind ops/tracing.ts's `Tracing`, exporting
 * through the OTLP/HTTP exporter (JSON or protobuf) and the bounded span queue
 * (span-queue.ts). Imported only when tracing is on, so a process without it never loads
 * the SDK. The provider is not registered globally: hookrelay's spans are its own, and an
 * application that embeds the server keeps its own global tracer.
 *
 * Spans (their names and attributes are listed in docs/telemetry.md):
 *   hookrelay.ingest   (producer) one message accepted, child of the producer's traceparent
 *   hookrelay.attempt  (client) one attempt, child of the message's stored context
 */
import {
  type Attributes,
  type Context,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  trace,
} from "@opentelemetry/api";
import { OTLPTraceExporter as JsonExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { OTLPTraceExporter as ProtobufExporter } from "@opentelemetry/exporter-trace-otlp-proto";
import { resourceFromAttributes } from "@opentelemetry/resources";
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BasicTracerProvider,
  ParentBasedSampler,
  type Sampler,
  TraceIdRatioBasedSampler,
} from "@opentelemetry/sdk-trace-base";
import type { AttemptOutcome } from "../domain/attempt-outcome.ts";
import { formatTraceparent, parseTraceparent } from "../lib/traceparent.ts";
import type { TracingConfig } from "../tracing-config.ts";
import type { TracingCounters } from "./metrics.ts";
import { makeSpanQueue } from "./span-queue.ts";
import { checkProducerParent, type Tracing } from "./tracing.ts";

const VERSION = "0.1.0";
/** a version-00 traceparent as hookrelay writes it (ids never all zeros: checked on the way in) */
const VERSION_00 = /^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/;

function samplerOf(config: TracingConfig): Sampler {
  switch (config.sampler) {
    case "always_on":
      return new AlwaysOnSampler();
    case "always_off":
      return new AlwaysOffSampler();
    case "traceidratio":
      return new TraceIdRatioBasedSampler(config.ratio);
    case "parentbased_always_off":
      return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case "parentbased_traceidratio":
      return new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(config.ratio) });
    default:
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
  }
}

/** The context a stored or given traceparent names; the root when there is none. */
function contextOf(traceparent: string | null | undefined): Context {
  if (!traceparent) return ROOT_CONTEXT;
  // What hookrelay stores is checked and written in version-00 form (tracing.ts), so the
  // fields are read by position; anything else goes through the parser.
  const tp = VERSION_00.test(traceparent)
    ? {
        traceId: traceparent.slice(3, 35),
        spanId: traceparent.slice(36, 52),
        flags: Number.parseInt(traceparent.slice(53), 16),
      }
    : parseTraceparent(traceparent);
  if (tp === null) return ROOT_CONTEXT;
  return trace.setSpanContext(ROOT_CONTEXT, {
    traceId: tp.traceId,
    spanId: tp.spanId,
    traceFlags: tp.flags,
    isRemote: true,
  });
}

/** A span's own context as a traceparent. */
function traceparentOf(span: Span): string {
  const c = span.spanContext();
  return formatTraceparent({ traceId: c.traceId, spanId: c.spanId, flags: c.traceFlags });
}

/** The attempt's outcome on its span. */
function endAttempt(span: Span, outcome: AttemptOutcome | null): void {
  if (outcome === null) {
    span.setAttribute("hookrelay.attempt.recorded", false);
    span.end();
    return;
  }
  // (few attributes: each costs on every attempt, in the span and in its export; the
  // ingest span, its parent, carries the app and the event type)
  const attributes: Attributes = { "hookrelay.latency_ms": Math.round(outcome.latencyMs) };
  const status = outcome.detail.transport === "http" ? outcome.detail.statusCode : null;
  if (status !== null) attributes["http.response.status_code"] = status;
  if (outcome.errorKind !== null) attributes["hookrelay.error_kind"] = outcome.errorKind;
  span.setAttributes(attributes);
  if (outcome.verdict !== "success")
    span.setStatus({ code: SpanStatusCode.ERROR, message: outcome.errorKind ?? outcome.verdict });
  // ends when the attempt did (its start is the span's, just before it was prepared)
  span.end(outcome.startedAt.getTime() + outcome.latencyMs);
}

export function makeSdkTracing(config: TracingConfig, counters: TracingCounters): Tracing {
  const exporterOptions = {
    url: config.url,
    headers: config.headers,
    timeoutMillis: config.exportTimeoutMs,
  };
  const exporter =
    config.protocol === "http/json"
      ? new JsonExporter(exporterOptions)
      : new ProtobufExporter(exporterOptions);
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({
      ...config.resourceAttributes,
      "service.name": config.serviceName,
      "service.version": VERSION,
    }),
    sampler: samplerOf(config),
    spanProcessors: [makeSpanQueue(exporter, config, counters)],
  });
  const tracer = provider.getTracer("hookrelay", VERSION);
  let stopping: Promise<void> | null = null;

  return {
    enabled: true,
    producerParent: (header) => checkProducerParent(header, counters),
    startIngest({ appId, eventType }, parent) {
      const span = tracer.startSpan(
        "hookrelay.ingest",
        {
          kind: SpanKind.PRODUCER,
          attributes: { "hookrelay.app_id": appId, "hookrelay.event_type": eventType },
        },
        contextOf(parent),
      );
      return {
        traceparent: traceparentOf(span),
        end(messageId, error) {
          if (messageId !== null) {
            span.setAttribute("hookrelay.message_id", messageId);
            span.setAttribute("messaging.message.id", messageId);
          }
          if (error !== undefined) {
            span.recordException(error instanceof Error ? error : String(error));
            span.setStatus({ code: SpanStatusCode.ERROR });
          }
          span.end();
        },
      };
    },
    attempts: {
      start(delivery) {
        const span = tracer.startSpan(
          "hookrelay.attempt",
          {
            kind: SpanKind.CLIENT,
            attributes: {
              "hookrelay.endpoint_id": delivery.endpointId,
              "hookrelay.message_id": delivery.messageId,
              "hookrelay.attempt_number": delivery.attemptCount + 1,
            },
          },
          contextOf(delivery.traceparent),
        );
        return { traceparent: traceparentOf(span), end: (outcome) => endAttempt(span, outcome) };
      },
    },
    shutdown() {
      stopping ??= provider.shutdown().catch(() => undefined);
      return stopping;
    },
  };
}
