/**
 * Prometheus metrics (prom-client). Counters and histograms are fed by this process's
 * worker; queue-wide gauges are read from the database at scrape time, so any process's
 * /metrics shows the whole queue.
 *
 * Label cardinality is bounded: the per-endpoint latency histogram labels at most
 * `maxEndpointLabels` endpoints (the first seen); the rest share endpoint="other". The
 * deliveries and attempts counters carry an `app` label for at most `maxAppLabels`
 * applications (the first seen), the rest app="other". Node's process metrics (prom-client's
 * default collectors) are prefixed `hookrelay_`. Every name and label is listed in
 * docs/telemetry.md (test/metrics-list.test.ts keeps the list equal to a scrape).
 */
import client from "prom-client";
import type { Pool } from "../db/pool.ts";
import { waitingSinceSql } from "../db/sql/delivery-states.ts";
import { ConcurrencyReason } from "../domain/adaptive-concurrency.ts";
import type { Alert } from "./alerts.ts";

/** Every alert kind, so the gauge shows 0 for a kind with no open alert (not a gap). */
const ALERT_KINDS = Object.keys({
  dead_letters_growing: true,
  oldest_pending: true,
  endpoint_slow: true,
  circuit_open: true,
  endpoint_gone: true,
} satisfies Record<Alert["kind"], true>);

import type { DeliveryResult } from "../queue/record-results.ts";
import type { WorkerTelemetry } from "../worker/worker-telemetry.ts";

export interface Metrics {
  registry: client.Registry;
  /** the Prometheus text of one scrape (the database is read once for it) */
  render(): Promise<string>;
  /** feed a batch of written results */
  recordResults(results: readonly DeliveryResult[]): void;
  recordClaim(size: number): void;
  /** this process's worker's telemetry: claims and written results feed the series above */
  readonly worker: WorkerTelemetry;
  /** what tracing counts (ops/tracing.ts, the API's traceparent header) */
  readonly tracing: TracingCounters;
}

/** The counters tracing feeds (docs/telemetry.md). */
export interface TracingCounters {
  /** spans the OTLP endpoint accepted */
  exported(n: number): void;
  /** spans lost: the export queue was full, or the export failed or timed out */
  dropped(reason: "queue_full" | "export_failed", n: number): void;
  /** a producer's traceparent that was not a valid W3C traceparent (ignored) */
  malformedTraceparent(): void;
}

/** Default applications with their own `app` label (HOOKRELAY_METRICS_MAX_APPS). */
export const DEFAULT_MAX_APP_LABELS = 20;

export function makeMetrics(options: {
  pool: Pool;
  maxEndpointLabels: number;
  /** applications with their own `app` label; the rest share app="other". Default 20. */
  maxAppLabels?: number;
  /** requests in flight in this process's worker, read at scrape time */
  inFlight?: () => number;
}): Metrics {
  const registry = new client.Registry();
  client.collectDefaultMetrics({ register: registry, prefix: "hookrelay_" });
  const maxAppLabels = options.maxAppLabels ?? DEFAULT_MAX_APP_LABELS;
  const deliveries = new client.Counter({
    name: "hookrelay_deliveries_total",
    help: 'Deliveries that reached an outcome after an attempt, by outcome (delivered, failed = will retry, dead_letter) and application (apps past the label limit share app="other").',
    labelNames: ["outcome", "app"],
    registers: [registry],
  });
  const attempts = new client.Counter({
    name: "hookrelay_attempts_total",
    help: 'HTTP attempts by status class (2xx..5xx, or error when no response came) and application (apps past the label limit share app="other").',
    labelNames: ["status_class", "app"],
    registers: [registry],
  });
  const spansExported = new client.Counter({
    name: "hookrelay_trace_spans_exported_total",
    help: "Trace spans the OTLP endpoint accepted (docs/telemetry.md).",
    registers: [registry],
  });
  const spansDropped = new client.Counter({
    name: "hookrelay_trace_spans_dropped_total",
    help: "Trace spans dropped, by reason: queue_full (the export queue was full) or export_failed (the OTLP endpoint failed, refused or timed out).",
    labelNames: ["reason"],
    registers: [registry],
  });
  const malformedTraceparent = new client.Counter({
    name: "hookrelay_traceparent_malformed_total",
    help: "Producers' traceparent headers that were not valid W3C traceparents (ignored; the message was accepted).",
    registers: [registry],
  });
  /** the app label of each application seen (at most maxAppLabels) */
  const appLabels = new Map<string, string>();
  const appLabel = (appId: string): string => {
    const known = appLabels.get(appId);
    if (known !== undefined) return known;
    if (appLabels.size >= maxAppLabels) return "other";
    appLabels.set(appId, appId);
    return appId;
  };
  const latency = new client.Histogram({
    name: "hookrelay_attempt_duration_seconds",
    help: 'Attempt latency (monotonic clock) per endpoint; endpoints past the label limit share endpoint="other".',
    labelNames: ["endpoint"],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30],
    registers: [registry],
  });
  const backpressure = new client.Counter({
    name: "hookrelay_backpressure_answers_total",
    help: "Backpressure answers (429, or 503 with Retry-After: error kind rate_limited), which pause their endpoint and are not failures (docs/delivery.md, Backpressure).",
    registers: [registry],
  });
  const claims = new client.Histogram({
    name: "hookrelay_claim_batch_size",
    help: "Rows taken by each claim that took any.",
    buckets: [1, 2, 5, 10, 25, 50, 100, 250, 500, 1000],
    registers: [registry],
  });
  new client.Gauge({
    name: "hookrelay_worker_in_flight",
    help: "Requests this process's worker has in flight.",
    registers: [registry],
    collect() {
      this.set(options.inFlight?.() ?? 0);
    },
  });
  /** the latency series of each labelled endpoint (at most maxEndpointLabels) */
  const latencyByEndpoint = new Map<string, ReturnType<typeof latency.labels>>();

  // The queue-wide gauges read the database at scrape time: one query per scrape, shared
  // by their collect() functions (prom-client awaits them all before writing the text).
  let snapshot: Promise<QueueSnapshot | null> | null = null;
  const readQueue = (): Promise<QueueSnapshot | null> => {
    snapshot ??= queueSnapshot(options.pool).catch(() => null);
    return snapshot;
  };
  new client.Gauge({
    name: "hookrelay_queue_depth",
    help: "Deliveries by state (queue-wide).",
    labelNames: ["state"],
    registers: [registry],
    async collect() {
      const q = await readQueue();
      for (const state of ["pending", "failed", "in_flight"])
        this.set({ state }, q?.depth[state] ?? 0);
    },
  });
  new client.Gauge({
    name: "hookrelay_oldest_pending_age_seconds",
    help: "How long the longest-waiting undelivered delivery has waited (queue-wide); 0 when none.",
    registers: [registry],
    async collect() {
      this.set((await readQueue())?.oldest ?? 0);
    },
  });
  new client.Gauge({
    name: "hookrelay_circuits",
    help: "Endpoints by circuit state.",
    labelNames: ["state"],
    registers: [registry],
    async collect() {
      const q = await readQueue();
      for (const state of ["closed", "open", "half_open"])
        this.set({ state }, q?.circuits[state] ?? 0);
    },
  });
  new client.Gauge({
    name: "hookrelay_endpoints_paused",
    help: "Endpoints paused now by a backpressure answer's Retry-After (docs/delivery.md, Backpressure).",
    registers: [registry],
    async collect() {
      this.set((await readQueue())?.paused ?? 0);
    },
  });
  new client.Gauge({
    name: "hookrelay_endpoints_concurrency",
    help: "Endpoints by why their adaptive in-flight limit last moved (docs/adaptive-concurrency.md); endpoints whose limit never moved are not counted.",
    labelNames: ["reason"],
    registers: [registry],
    async collect() {
      const q = await readQueue();
      for (const reason of Object.values(ConcurrencyReason))
        this.set({ reason }, q?.concurrency[reason] ?? 0);
    },
  });
  new client.Gauge({
    name: "hookrelay_dead_letters",
    help: "Deliveries in the dead-letter state.",
    registers: [registry],
    async collect() {
      this.set((await readQueue())?.dead ?? 0);
    },
  });
  new client.Gauge({
    name: "hookrelay_alerts_open",
    help: "Open alerts by kind, as the maintenance runner last raised them (docs/operations.md).",
    labelNames: ["kind"],
    registers: [registry],
    async collect() {
      const q = await readQueue();
      for (const kind of new Set([...ALERT_KINDS, ...Object.keys(q?.alerts ?? {})]))
        this.set({ kind }, q?.alerts[kind] ?? 0);
    },
  });
  new client.Gauge({
    name: "hookrelay_metrics_scrape_ok",
    help: "1 when this scrape could read the database.",
    registers: [registry],
    async collect() {
      this.set((await readQueue()) ? 1 : 0);
    },
  });

  const metrics: Metrics = {
    registry,
    async render() {
      snapshot = null;
      return registry.metrics();
    },
    recordResults(results) {
      // Counted per batch and observed through each endpoint's bound child: label lookups
      // once per batch or endpoint, not per result.
      // (keys are "label value\0app label")
      const byOutcome = new Map<string, number>();
      const byClass = new Map<string, number>();
      let limited = 0;
      for (const r of results) {
        if (r.backpressure) limited++;
        const app = appLabel(r.appId);
        const outcomeKey = `${r.nextStatus}\0${app}`;
        byOutcome.set(outcomeKey, (byOutcome.get(outcomeKey) ?? 0) + 1);
        const statusClass = r.statusCode === null ? "error" : `${Math.floor(r.statusCode / 100)}xx`;
        const classKey = `${statusClass}\0${app}`;
        byClass.set(classKey, (byClass.get(classKey) ?? 0) + 1);
        let series = latencyByEndpoint.get(r.endpointId);
        if (series === undefined) {
          const label = latencyByEndpoint.size < options.maxEndpointLabels ? r.endpointId : "other";
          series = latency.labels({ endpoint: label });
          // (endpoints past the limit are not kept: each of their results looks up "other")
          if (label !== "other") latencyByEndpoint.set(r.endpointId, series);
        }
        series.observe(r.latencyMs / 1000);
      }
      for (const [key, n] of byOutcome) {
        const [outcome, app] = key.split("\0");
        deliveries.inc({ outcome, app }, n);
      }
      for (const [key, n] of byClass) {
        const [status_class, app] = key.split("\0");
        attempts.inc({ status_class, app }, n);
      }
      if (limited > 0) backpressure.inc(limited);
    },
    recordClaim(size) {
      claims.observe(size);
    },
    get worker() {
      return telemetry;
    },
    tracing: {
      exported: (n) => spansExported.inc(n),
      dropped: (reason, n) => spansDropped.inc({ reason }, n),
      malformedTraceparent: () => malformedTraceparent.inc(),
    },
  };
  // every reason shows 0 from the first scrape (not a gap)
  for (const reason of ["queue_full", "export_failed"]) spansDropped.inc({ reason }, 0);
  const telemetry: WorkerTelemetry = {
    claimed: (size) => metrics.recordClaim(size),
    written: (results) => metrics.recordResults(results),
  };
  return metrics;
}

interface QueueSnapshot {
  depth: Record<string, number>;
  oldest: number | null;
  circuits: Record<string, number>;
  dead: number;
  /** endpoints paused by a Retry-After now */
  paused: number;
  /** endpoints by why their adaptive in-flight limit last moved */
  concurrency: Record<string, number>;
  /** open alerts by kind */
  alerts: Record<string, number>;
}

async function queueSnapshot(pool: Pool): Promise<QueueSnapshot> {
  const { rows } = await pool.query(`
    select
      (select coalesce(json_object_agg(status, n), '{}') from (
         select status, count(*)::int as n from deliveries
         where queued group by status) s) as depth,
      (select extract(epoch from now() - min(${waitingSinceSql("deliveries")}))::float8 from deliveries
        where queued) as oldest,
      (select coalesce(json_object_agg(circuit_state, n), '{}') from (
         select circuit_state, count(*)::int as n from endpoint_health group by circuit_state) c) as circuits,
      (select count(*)::int from deliveries where dead_lettered) as dead,
      (select count(*)::int from endpoint_health where paused_until > now()) as paused,
      (select coalesce(json_object_agg(concurrency_reason, n), '{}') from (
         select concurrency_reason, count(*)::int as n from endpoint_health
         where concurrency_reason is not null group by concurrency_reason) r) as concurrency,
      (select coalesce(json_object_agg(kind, n), '{}') from (
         select kind, count(*)::int as n from alerts
         where resolved_at is null group by kind) a) as alerts`);
  return rows[0];
}
