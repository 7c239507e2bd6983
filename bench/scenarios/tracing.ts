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
 *
 * Each run measures four sides, on off off on (or off on on off, alternating from run to
 * run; --quick: on off, one worker start each), and compares the two sides' means: a
 * machine that drifts during the run (another process starting, a cache warming) then
 * weighs on both sides alike. One pair of sides
 * of 50,000 deliveries lasts about 8 s each here, where a second of someone else's work
 * moves a single side's rate by 10%.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import type { BenchContext } from "../lib/context.ts";
import { type DeliveryRun, runDelivery } from "./delivery.ts";

export interface TracingRun {
  /** the two sides with tracing on, and the two with it off, in the order they ran */
  on: DeliveryRun[];
  off: DeliveryRun[];
  /** the mean rate of each */
  onRate: number;
  offRate: number;
  /** onRate / offRate */
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
    const on: DeliveryRun[] = [];
    const off: DeliveryRun[] = [];
    let exports = 0;
    let exportBytes = 0;
    const measure = async (mode: "on" | "off") => {
      const before = { ...sink.counts };
      const r = await side(mode);
      if (mode === "on") {
        exports += sink.counts.exports - before.exports;
        exportBytes += sink.counts.bytes - before.bytes;
        on.push(r);
      } else off.push(r);
    };
    // (--quick: one side each, the harness's proof only; each side starts a worker)
    const order: ("on" | "off")[] = ctx.opts.quick
      ? ["on", "off"]
      : run % 2 === 1
        ? ["on", "off", "off", "on"]
        : ["off", "on", "on", "off"];
    for (const mode of order) await measure(mode);
    ctx.log(`  tracing on: ${exports} exports, ${Math.round(exportBytes / 1024)} KiB to the sink`);
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
    const onRate = mean(on.map((r) => r.rate));
    const offRate = mean(off.map((r) => r.rate));
    const cpu = (rs: DeliveryRun[]) => mean(rs.map((r) => r.cpuPerThousand.ms.worker ?? 0));
    return {
      on,
      off,
      onRate,
      offRate,
      ratio: offRate > 0 ? onRate / offRate : 0,
      cpuRatio: cpu(off) > 0 ? cpu(on) / cpu(off) : 0,
      exports,
      exportBytes,
    };
  } finally {
    await sink.close();
  }
}
