/**
 * The span processor between the tracer and the OTLP exporter (docs/telemetry.md, "Traces"):
 * a bounded queue and one export at a time, so an OTLP endpoint that is down or slow costs
 * the delivery path nothing but a push onto an array. Ended spans wait at most
 * `scheduleDelayMs` (or until a batch is full); with `maxQueueSize` waiting, more are
 * dropped. An export that fails or outlasts `exportTimeoutMs` loses its batch. Both are
 * counted (hookrelay_trace_spans_dropped_total), as are the spans exported.
 *
 * The SDK's BatchSpanProcessor does the same but keeps its drop count to itself; this one
 * reports it.
 */
import { ExportResultCode } from "@opentelemetry/core";
import type { ReadableSpan, SpanExporter, SpanProcessor } from "@opentelemetry/sdk-trace-base";
import type { TracingCounters } from "./metrics.ts";

export interface SpanQueueOptions {
  maxQueueSize: number;
  maxExportBatchSize: number;
  scheduleDelayMs: number;
  exportTimeoutMs: number;
}

export function makeSpanQueue(
  exporter: SpanExporter,
  options: SpanQueueOptions,
  counters: Pick<TracingCounters, "exported" | "dropped">,
): SpanProcessor {
  let queue: ReadableSpan[] = [];
  /** the export under way, if any */
  let exporting: Promise<void> | null = null;
  let timer: NodeJS.Timeout | null = null;
  let stopped = false;

  function schedule(): void {
    if (timer !== null || exporting !== null) return;
    timer = setTimeout(() => {
      timer = null;
      exportNext();
    }, options.scheduleDelayMs);
    timer.unref();
  }

  /** Exports one batch, then the next if one is due. */
  function exportNext(): void {
    if (exporting !== null || queue.length === 0) return;
    const batch = queue.slice(0, options.maxExportBatchSize);
    queue = queue.slice(batch.length);
    exporting = exportBatch(batch).finally(() => {
      exporting = null;
      if (queue.length >= options.maxExportBatchSize) exportNext();
      else if (queue.length > 0) schedule();
    });
  }

  function exportBatch(batch: ReadableSpan[]): Promise<void> {
    return new Promise<void>((resolve) => {
      let settled = false;
      const done = (ok: boolean) => {
        if (settled) return;
        settled = true;
        clearTimeout(deadline);
        if (ok) counters.exported(batch.length);
        else counters.dropped("export_failed", batch.length);
        resolve();
      };
      const deadline = setTimeout(() => done(false), options.exportTimeoutMs);
      deadline.unref();
      try {
        exporter.export(batch, (result) => done(result.code === ExportResultCode.SUCCESS));
      } catch {
        done(false);
      }
    });
  }

  async function flush(): Promise<void> {
    if (timer !== null) {
      clearTimeout(timer);
      timer = null;
    }
    // every batch waiting now, one export at a time (each bounded by the timeout)
    while (exporting !== null || queue.length > 0) {
      if (exporting === null) exportNext();
      await exporting;
    }
  }

  return {
    onStart() {},
    onEnd(span) {
      if (stopped) return;
      if (queue.length >= options.maxQueueSize) {
        counters.dropped("queue_full", 1);
        return;
      }
      queue.push(span);
      // a full batch is exported right after this turn, not inside the attempt's own call
      if (queue.length === options.maxExportBatchSize) setImmediate(exportNext);
      else schedule();
    },
    forceFlush: flush,
    async shutdown() {
      if (stopped) return;
      await flush();
      stopped = true;
      await exporter.shutdown();
    },
  };
}
