/**
 * Scenario 15: what tracing costs (docs/telemetry.md, "Traces"). Scenario 3's single-worker
 * delivery of the seeded backlog, every message with a producer's traceparent of its own and
 * every endpoint propagating it (propagateTrace on, so each request carries the attempt's
 * traceparent), twice in one run: tracing on, exporting to an OTLP/HTTP sink in the bench
 * process (protobuf, OTLP's default, and the SDK's default queue and batch sizes), and
 * tracing off. The figure is on / off (target >= 0.9). The order alternates from run to run,
 * so neither side always runs on a warmer machine. The sink answers every export at once and
 * counts them and their bytes, so the figure is the cost of making and exporting the spans,
 * not of a collector.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import type { BenchContext } from "../lib/context.ts";
import { type DeliveryRun, runDelivery } from "./delivery.ts";

export interface TracingRun {
  on: DeliveryRun;
  off: DeliveryRun;
  /** on.rate / off.rate */
  ratio: number;
  /** the worker's CPU time per 1,000 deliveries, on over off (steadier than rates under load) */
  cpuRatio: number;
  /** export requests the sink received during the "on" side, and their bytes */
  exports: number;
  exportBytes: number;
}

/** An OTLP/HTTP endpoint that takes every export and counts it. */
async function startOtlpSink() {
  const counts = { exports: 0, bytes: 0 };
  const server = http.createServer((req, res) => {
    req.on("data", (c: Buffer) => {
      counts.bytes += c.length;
    });
    req.on("end", () => {
      counts.exports++;
      res.writeHead(200, { "content-type": "application/x-protobuf" }).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    counts,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export async function runTracing(ctx: BenchContext, run: number): Promise<TracingRun> {
  const messages = ctx.opts.throughputMessages;
  const sink = await startOtlpSink();
  try {
    const side = async (mode: "on" | "off") => {
      ctx.log(`  tracing ${mode}: ${messages} traced messages, 1 worker`);
      return runDelivery(ctx, {
        workers: 1,
        messages,
        traced: true,
        env: mode === "on" ? { OTEL_EXPORTER_OTLP_ENDPOINT: sink.url } : {},
      });
    };
    let on: DeliveryRun;
    let off: DeliveryRun;
    let exports = 0;
    let exportBytes = 0;
    const measureOn = async () => {
      const before = { ...sink.counts };
      const r = await side("on");
      exports = sink.counts.exports - before.exports;
      exportBytes = sink.counts.bytes - before.bytes;
      return r;
    };
    if (run % 2 === 1) {
      on = await measureOn();
      off = await side("off");
    } else {
      off = await side("off");
      on = await measureOn();
    }
    ctx.log(`  tracing on: ${exports} exports, ${Math.round(exportBytes / 1024)} KiB to the sink`);
    const cpu = (r: DeliveryRun) => r.cpuPerThousand.ms.worker ?? 0;
    return {
      on,
      off,
      ratio: off.rate > 0 ? on.rate / off.rate : 0,
      cpuRatio: cpu(off) > 0 ? cpu(on) / cpu(off) : 0,
      exports,
      exportBytes,
    };
  } finally {
    await sink.close();
  }
}
