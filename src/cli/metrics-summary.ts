/**
 * `hookrelay metrics`: what a scrape of /metrics says, summed up for a person (src/ops/
 * metrics.ts names the series). Counters and the latency histogram count since the
 * answering process started; the queue gauges are read from the database at each scrape,
 * so they are queue-wide.
 */
import { histograms, parsePrometheusText, quantile, type Sample } from "./prometheus-text.ts";

export interface Latency {
  count: number;
  meanMs: number | null;
  p50Ms: number | null;
  p95Ms: number | null;
  p99Ms: number | null;
}

export interface MetricsSummary {
  /** hookrelay_deliveries_total by outcome (delivered, failed = will retry, dead_letter) */
  deliveries: Record<string, number>;
  /** hookrelay_attempts_total by status class (2xx..5xx, error) */
  attempts: Record<string, number>;
  /** attempts that got no 2xx: every class but 2xx */
  failedAttempts: number;
  /** hookrelay_attempt_duration_seconds, all endpoints together */
  latency: Latency;
  /** the same per endpoint label (an endpoint id, or "other" past the label limit) */
  endpoints: ({ endpoint: string } & Latency)[];
  /** deliveries per app label, when the server labels them by app */
  apps: { app: string; deliveries: Record<string, number> }[];
  /** hookrelay_queue_depth by state, queue-wide */
  queue: Record<string, number>;
  oldestPendingSeconds: number | null;
  deadLetters: number | null;
  circuits: Record<string, number>;
  alertsOpen: Record<string, number>;
  endpointsPaused: number | null;
  workerInFlight: number | null;
  /** hookrelay_metrics_scrape_ok: the server could read its database for this scrape */
  databaseRead: boolean | null;
}

const byLabel = (samples: readonly Sample[], name: string, label: string) => {
  const out: Record<string, number> = {};
  for (const s of samples)
    if (s.name === name) {
      const key = s.labels[label] ?? "";
      out[key] = (out[key] ?? 0) + s.value;
    }
  return out;
};

const single = (samples: readonly Sample[], name: string): number | null => {
  const s = samples.filter((x) => x.name === name);
  return s.length ? s.reduce((n, x) => n + x.value, 0) : null;
};

const ms = (seconds: number | null) => (seconds === null ? null : Math.round(seconds * 1_000));

const LATENCY = "hookrelay_attempt_duration_seconds";

/** The summary of one scrape's text. */
export function summarizeMetrics(text: string): MetricsSummary {
  const samples = parsePrometheusText(text);
  const latencyOf = (
    b: ReturnType<typeof histograms> extends Map<string, infer B> ? B : never,
  ) => ({
    count: b.count,
    meanMs: b.count ? ms(b.sum / b.count) : null,
    p50Ms: ms(quantile(0.5, b)),
    p95Ms: ms(quantile(0.95, b)),
    p99Ms: ms(quantile(0.99, b)),
  });
  const all = histograms(samples, LATENCY, () => "").get("");
  const perEndpoint = histograms(samples, LATENCY, (l) => l.endpoint ?? "");
  const attempts = byLabel(samples, "hookrelay_attempts_total", "status_class");
  const appDeliveries = new Map<string, Record<string, number>>();
  for (const s of samples)
    if (s.name === "hookrelay_deliveries_total" && s.labels.app !== undefined) {
      const d = appDeliveries.get(s.labels.app) ?? {};
      const outcome = s.labels.outcome ?? "";
      d[outcome] = (d[outcome] ?? 0) + s.value;
      appDeliveries.set(s.labels.app, d);
    }
  const scrapeOk = single(samples, "hookrelay_metrics_scrape_ok");
  return {
    deliveries: byLabel(samples, "hookrelay_deliveries_total", "outcome"),
    attempts,
    failedAttempts: Object.entries(attempts)
      .filter(([k]) => k !== "2xx")
      .reduce((n, [, v]) => n + v, 0),
    latency: all
      ? latencyOf(all)
      : { count: 0, meanMs: null, p50Ms: null, p95Ms: null, p99Ms: null },
    endpoints: [...perEndpoint]
      .filter(([, b]) => b.count > 0)
      .map(([endpoint, b]) => ({ endpoint, ...latencyOf(b) }))
      .sort((a, b) => b.count - a.count),
    apps: [...appDeliveries].map(([app, deliveries]) => ({ app, deliveries })),
    queue: byLabel(samples, "hookrelay_queue_depth", "state"),
    oldestPendingSeconds: single(samples, "hookrelay_oldest_pending_age_seconds"),
    deadLetters: single(samples, "hookrelay_dead_letters"),
    circuits: byLabel(samples, "hookrelay_circuits", "state"),
    alertsOpen: byLabel(samples, "hookrelay_alerts_open", "kind"),
    endpointsPaused: single(samples, "hookrelay_endpoints_paused"),
    workerInFlight: single(samples, "hookrelay_worker_in_flight"),
    databaseRead: scrapeOk === null ? null : scrapeOk === 1,
  };
}
