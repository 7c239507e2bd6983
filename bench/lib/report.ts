/**
 * Turns the raw runs into figures: each the median over runs, each comparison the median of
 * ratios taken within one run. Prints them as a table, with the target and whether
 * this run met it.
 */
import type { AdaptiveRun } from "../scenarios/adaptive.ts";
import type { BacklogRun } from "../scenarios/backlog.ts";
import type { BrokersRun } from "../scenarios/brokers.ts";
import type { CeilingRun } from "../scenarios/ceiling.ts";
import type { DashboardRun } from "../scenarios/dashboard.ts";
import type { DeliveryRun } from "../scenarios/delivery.ts";
import type { EgressRun } from "../scenarios/egress.ts";
import type { HistoryRun } from "../scenarios/history.ts";
import type { IngestRun } from "../scenarios/ingest.ts";
import type { LatencyRun } from "../scenarios/latency.ts";
import type { OrderedRun } from "../scenarios/ordered.ts";
import type { PgBossRun } from "../scenarios/pgboss.ts";
import type { ReplayRun } from "../scenarios/replay.ts";
import type { SoakRun } from "../scenarios/soak.ts";
import type { SteadyRun } from "../scenarios/steady.ts";
import type { TracingRun } from "../scenarios/tracing.ts";
import { DASHBOARD_PAGES, steadyFigures } from "./report-steady.ts";
import { median, ratio } from "./stats.ts";

export interface RunResult {
  ceiling?: CeilingRun;
  pgboss?: PgBossRun;
  hookrelay1?: DeliveryRun;
  hookrelay2?: DeliveryRun;
  latency?: LatencyRun;
  ingest?: IngestRun;
  slowHookrelay?: DeliveryRun;
  slowPgboss?: PgBossRun;
  isolation?: DeliveryRun;
  backlog?: BacklogRun;
  /** scenario 3's single worker, run from src/ through tsx */
  source1?: DeliveryRun;
  dashboard?: DashboardRun;
  replay?: ReplayRun;
  ordered?: OrderedRun;
  adaptive?: AdaptiveRun;
  tracing?: TracingRun;
  brokers?: BrokersRun;
  history?: HistoryRun;
  egress?: EgressRun;
  steady?: SteadyRun;
  soak?: SoakRun;
}

export interface Figure {
  scenario: string;
  figure: string;
  unit: string;
  median: number;
  runs: number[];
  target: string | null;
  met: boolean | null;
}

type Pick = (r: RunResult) => number | undefined;

export function figures(runs: RunResult[]): Figure[] {
  const out: Figure[] = [];
  const add = (
    scenario: string,
    figure: string,
    unit: string,
    pick: Pick,
    target?: { text: string; ok: (v: number) => boolean },
  ) => {
    const values = runs.map(pick).filter((v): v is number => v !== undefined);
    if (values.length === 0) return;
    const m = median(values);
    out.push({
      scenario,
      figure,
      unit,
      median: m,
      runs: values,
      target: target?.text ?? null,
      met: target && Number.isFinite(m) ? target.ok(m) : null,
    });
  };
  const atLeast = (x: number, text = `>= ${x}`) => ({ text, ok: (v: number) => v >= x });
  const atMost = (x: number, text = `<= ${x}`) => ({ text, ok: (v: number) => v <= x });

  add("1 ceiling", "bare undici POSTs/s", "/s", (r) => r.ceiling?.rate);
  add(
    "1 ceiling",
    "CPU ms / 1k requests: client",
    "ms",
    (r) => r.ceiling?.cpuPerThousand.ms.client,
  );
  add("2 peer", "pg-boss jobs/s", "/s", (r) => r.pgboss?.rate);
  // the same CPU figures as scenario 3's, for the peer: where each spends its time
  const peerCpu = (group: string) => (r: RunResult) => r.pgboss?.cpuPerThousand.ms[group];
  add("2 peer", "CPU ms / 1k jobs: pg-boss worker", "ms", peerCpu("worker"));
  add("2 peer", "CPU ms / 1k jobs: PostgreSQL", "ms", peerCpu("postgres"));
  add("2 peer", "CPU ms / 1k jobs: receiver", "ms", peerCpu("receiver"));
  add("3 throughput", "hookrelay 1 worker", "/s", (r) => r.hookrelay1?.rate);
  add("3 throughput", "hookrelay 2 workers", "/s", (r) => r.hookrelay2?.rate);
  const best = (r: RunResult) =>
    r.hookrelay1 || r.hookrelay2
      ? Math.max(r.hookrelay1?.rate ?? 0, r.hookrelay2?.rate ?? 0)
      : undefined;
  const vs = (a: number | undefined, b: number | undefined) =>
    a !== undefined && b !== undefined ? ratio(a, b) : undefined;
  add("3 throughput", "1 worker / ceiling", "x", (r) => vs(r.hookrelay1?.rate, r.ceiling?.rate));
  add("3 throughput", "2 workers / ceiling", "x", (r) => vs(r.hookrelay2?.rate, r.ceiling?.rate));
  add("3 throughput", "best / ceiling", "x", (r) => vs(best(r), r.ceiling?.rate), atLeast(0.5));
  add("3 throughput", "best / pg-boss", "x", (r) => vs(best(r), r.pgboss?.rate), atLeast(2));
  // CPU time per 1,000 deliveries (1 worker): the cost of the work itself, which steal moves
  // far less than the rates above
  const cpu = (group: string) => (r: RunResult) => r.hookrelay1?.cpuPerThousand.ms[group];
  add("3 throughput", "CPU ms / 1k deliveries: worker", "ms", cpu("worker"));
  add("3 throughput", "CPU ms / 1k deliveries: PostgreSQL", "ms", cpu("postgres"));
  add("3 throughput", "CPU ms / 1k deliveries: receiver", "ms", cpu("receiver"));
  add("3 throughput", "CPU stolen by the host (1 worker)", "%", (r) =>
    r.hookrelay1 ? 100 * r.hookrelay1.cpuPerThousand.steal : undefined,
  );
  add("4 latency", "enqueue-to-delivery p50", "ms", (r) => r.latency?.p50, atMost(15));
  add("4 latency", "enqueue-to-delivery p95", "ms", (r) => r.latency?.p95);
  add("4 latency", "enqueue-to-delivery p99", "ms", (r) => r.latency?.p99, atMost(60));
  add("4 latency", "accept-to-attempt-start p50 (db)", "ms", (r) => r.latency?.queueP50);
  add("4 latency", "accept-to-attempt-start p99 (db)", "ms", (r) => r.latency?.queueP99);
  add("4 latency", "offered rate", "/s", (r) => r.latency?.offeredRate);
  for (const group of ["api", "worker", "postgres", "receiver", "client"]) {
    add(
      "4 latency",
      `CPU ms / 1k messages: ${group === "client" ? "load generator" : group}`,
      "ms",
      (r) => r.latency?.cpuPerThousand.ms[group],
    );
  }
  add("4 latency", "CPU stolen by the host", "%", (r) =>
    r.latency ? 100 * r.latency.cpuPerThousand.steal : undefined,
  );
  add("4 latency", "scheduled-to-delivery p99", "ms", (r) => r.latency?.scheduledP99);
  add("4 latency", "API response p99", "ms", (r) => r.latency?.apiP99);
  add("5 ingest", "single-message requests", "/s", (r) => r.ingest?.rate, atLeast(5000));
  add("5 ingest", "batch requests (no batch endpoint)", "/s", (r) =>
    r.ingest ? Number.NaN : undefined,
  );
  const ingestCpu = (group: string) => (r: RunResult) => r.ingest?.cpuPerThousand.ms[group];
  add("5 ingest", "CPU ms / 1k messages: API", "ms", ingestCpu("api"));
  add("5 ingest", "CPU ms / 1k messages: PostgreSQL", "ms", ingestCpu("postgres"));
  add("5 ingest", "CPU ms / 1k messages: load generator", "ms", ingestCpu("client"));
  add("5 ingest", "CPU stolen by the host", "%", (r) =>
    r.ingest ? 100 * r.ingest.cpuPerThousand.steal : undefined,
  );
  add("6 slow receiver", "hookrelay (50 ms receiver)", "/s", (r) => r.slowHookrelay?.rate);
  add("6 slow receiver", "pg-boss (50 ms receiver)", "/s", (r) => r.slowPgboss?.rate);
  add(
    "6 slow receiver",
    "hookrelay / pg-boss",
    "x",
    (r) => vs(r.slowHookrelay?.rate, r.slowPgboss?.rate),
    atLeast(4),
  );
  add("7 isolation", "healthy endpoints", "/s", (r) => r.isolation?.rate);
  add(
    "7 isolation",
    "healthy / scenario 3 (1 worker)",
    "x",
    (r) => vs(r.isolation?.rate, r.hookrelay1?.rate),
    atLeast(0.9),
  );
  add("8 backlog", "claim 500 rows, small backlog", "ms", (r) => r.backlog?.smallMs);
  add("8 backlog", "claim 500 rows, large backlog", "ms", (r) => r.backlog?.largeMs);
  add("8 backlog", "large / small", "x", (r) => r.backlog?.ratio, atMost(1.5));
  add(
    "9 memory",
    "worker peak RSS, 1 worker",
    "MB",
    (r) => (r.hookrelay1 ? Math.max(...r.hookrelay1.peakRssMiB) : undefined),
    atMost(300),
  );
  add(
    "9 memory",
    "worker peak RSS, 2 workers",
    "MB",
    (r) => (r.hookrelay2 ? Math.max(...r.hookrelay2.peakRssMiB) : undefined),
    atMost(300),
  );
  add("10 compiled vs source", "1 worker from src/ (tsx)", "/s", (r) => r.source1?.rate);
  add("10 compiled vs source", "compiled / source", "x", (r) =>
    vs(r.hookrelay1?.rate, r.source1?.rate),
  );
  add(
    "10 compiled vs source",
    "CPU ms / 1k deliveries: worker from src/",
    "ms",
    (r) => r.source1?.cpuPerThousand.ms.worker,
  );
  add("10 compiled vs source", "worker CPU compiled / source", "x", (r) =>
    vs(r.hookrelay1?.cpuPerThousand.ms.worker, r.source1?.cpuPerThousand.ms.worker),
  );
  add(
    "11 dashboard",
    "chart buckets, 1 endpoint (24 h at 100/s)",
    "ms",
    (r) => r.dashboard?.chartEndpointMs,
    atMost(100, "< 100"),
  );
  add("11 dashboard", "chart buckets, everything", "ms", (r) => r.dashboard?.chartAllMs);
  for (const page of DASHBOARD_PAGES) {
    add("11 dashboard", `server: ${page}`, "ms", (r) => r.dashboard?.server[page]);
  }
  for (const page of DASHBOARD_PAGES) {
    add(
      "11 dashboard",
      `browser load, charts drawn: ${page}`,
      "ms",
      (r) => r.dashboard?.browser?.[page],
      atMost(1000, "< 1000"),
    );
  }
  add("12 replay", "live deliveries/s, alone", "/s", (r) => r.replay?.liveAlone);
  add(
    "12 replay",
    "live deliveries/s, during a bulk replay",
    "/s",
    (r) => r.replay?.liveDuringReplay,
  );
  add("12 replay", "live during replay / alone", "x", (r) => r.replay?.ratio, atLeast(0.8));
  add("12 replay", "replay rows made due/s, with live traffic", "/s", (r) => r.replay?.replayRate);
  add("12 replay", "replay requests received/s", "/s", (r) => r.replay?.replayDeliveredRate);
  add(
    "12 replay",
    "replay rows made due/s, no live traffic",
    "/s",
    (r) => r.replay?.replayAloneRate,
  );
  add("13 ordered", "unordered, 1 worker", "/s", (r) => r.ordered?.unordered.rate);
  add("13 ordered", "1,000 keys over 100 endpoints", "/s", (r) => r.ordered?.manyKeys.rate);
  add("13 ordered", "1,000 keys / unordered", "x", (r) => r.ordered?.ratio, atLeast(0.8));
  add("13 ordered", "10 keys (round-trip bound)", "/s", (r) => r.ordered?.fewKeys.rate);
  add("13 ordered", "10 keys: ms per message of a key", "ms", (r) => r.ordered?.fewKeysCycleMs);
  add(
    "13 ordered",
    "10 keys: receiver latency p50 (attempts)",
    "ms",
    (r) => r.ordered?.fewKeys.attemptLatencyP50Ms,
  );
  add("13 ordered", "requests out of key order", "n", (r) =>
    r.ordered
      ? (r.ordered.manyKeys.orderViolations ?? 0) + (r.ordered.fewKeys.orderViolations ?? 0)
      : undefined,
  );
  add("14 adaptive", "limiter on, 1 worker", "/s", (r) => r.adaptive?.on.rate);
  add("14 adaptive", "limiter off, 1 worker", "/s", (r) => r.adaptive?.off.rate);
  add("14 adaptive", "on / off", "x", (r) => r.adaptive?.ratio, atLeast(0.95));
  add("15 tracing", "tracing on, 1 worker (mean of 2)", "/s", (r) => r.tracing?.onRate);
  add("15 tracing", "tracing off, 1 worker (mean of 2)", "/s", (r) => r.tracing?.offRate);
  add("15 tracing", "on / off", "x", (r) => r.tracing?.ratio, atLeast(0.9));
  add("15 tracing", "OTLP exports (tracing on)", "n", (r) => r.tracing?.exports);
  // CPU time is steadier than a rate on a loaded machine: the overhead in the worker itself
  const workerCpu = (side: "on" | "off") => (r: RunResult) => {
    const sides = r.tracing?.[side];
    if (!sides?.length) return undefined;
    return sides.reduce((sum, s) => sum + (s.cpuPerThousand.ms.worker ?? 0), 0) / sides.length;
  };
  add("15 tracing", "worker CPU per 1,000 deliveries, on", "ms", workerCpu("on"));
  add("15 tracing", "worker CPU per 1,000 deliveries, off", "ms", workerCpu("off"));
  add("15 tracing", "worker CPU on / off", "x", (r) => r.tracing?.cpuRatio);
  const perRow = (pick: (h: HistoryRun) => number, scale: number) => (r: RunResult) =>
    r.history ? (pick(r.history) * scale) / r.history.rows : undefined;
  add(
    "16 history",
    "purge a day by drop: ms / 1M rows",
    "ms",
    perRow((h) => h.drop.ms, 1e6),
  );
  add(
    "16 history",
    "by DELETE + VACUUM: ms / 1M rows",
    "ms",
    perRow((h) => h.delete.ms + h.vacuum.ms, 1e6),
  );
  add(
    "16 history",
    "PG CPU ms / 1M rows, drop (>= 1 tick)",
    "ms",
    perRow((h) => Math.max(h.drop.cpuMs, 10), 1e6),
  );
  add(
    "16 history",
    "PG CPU ms / 1M rows, DELETE + VACUUM",
    "ms",
    perRow((h) => h.delete.cpuMs + h.vacuum.cpuMs, 1e6),
  );
  add(
    "16 history",
    "WAL bytes / row, drop",
    "B",
    perRow((h) => h.drop.walBytes, 1),
  );
  add(
    "16 history",
    "WAL bytes / row, DELETE + VACUUM",
    "B",
    perRow((h) => h.delete.walBytes + h.vacuum.walBytes, 1),
  );
  add(
    "16 history",
    "drop: the filesystem freeing its bytes, ms / 1M rows",
    "ms",
    perRow((h) => h.drop.fsFreeMs ?? 0, 1e6),
  );
  add("16 history", "time: DELETE + VACUUM / drop", "x", (r) => r.history?.timeRatio, atLeast(100));
  add(
    "16 history",
    "time: DELETE + VACUUM / drop less the filesystem's freeing",
    "x",
    (r) => r.history?.timeRatioPg,
    atLeast(100),
  );
  add(
    "16 history",
    "PG CPU: DELETE + VACUUM / drop",
    "x",
    (r) => r.history?.cpuRatio,
    atLeast(100),
  );
  for (const [kind, name] of [
    ["nats", "NATS JetStream"],
    ["amqp", "RabbitMQ"],
  ] as const) {
    add("17 brokers", `${name}: bare client, confirmed`, "/s", (r) => r.brokers?.[kind]?.bare);
    add("17 brokers", `${name}: hookrelay, 1 worker`, "/s", (r) => r.brokers?.[kind]?.hookrelay);
    add(
      "17 brokers",
      `${name}: hookrelay's publish to confirm, median`,
      "ms",
      (r) => r.brokers?.[kind]?.publishP50Ms,
    );
    add(
      "17 brokers",
      `${name}: hookrelay, adaptive limit off`,
      "/s",
      (r) => r.brokers?.[kind]?.fixedWindow,
    );
    add(
      "17 brokers",
      `${name}: adaptive limit off / bare`,
      "x",
      (r) => r.brokers?.[kind]?.fixedWindowRatio,
    );
    add(
      "17 brokers",
      `${name}: CPU ms / 1k: bare client`,
      "ms",
      (r) => r.brokers?.[kind]?.bareCpuMs,
    );
    add("17 brokers", `${name}: CPU ms / 1k: worker`, "ms", (r) => r.brokers?.[kind]?.workerCpuMs);
    add(
      "17 brokers",
      `${name}: CPU ms / 1k: PostgreSQL`,
      "ms",
      (r) => r.brokers?.[kind]?.postgresCpuMs,
    );
    add(
      "17 brokers",
      `${name}: CPU ms / 1k: the broker, bare client's run`,
      "ms",
      (r) => r.brokers?.[kind]?.brokerBareCpuMs,
    );
    add(
      "17 brokers",
      `${name}: CPU ms / 1k: the broker, hookrelay's run`,
      "ms",
      (r) => r.brokers?.[kind]?.brokerCpuMs,
    );
    add(
      "17 brokers",
      `${name}: hookrelay / bare`,
      "x",
      (r) => r.brokers?.[kind]?.ratio,
      atLeast(0.6),
    );
  }
  add("18 egress", "direct, 1 worker", "/s", (r) => r.egress?.direct.rate);
  add("18 egress", "through squid (CONNECT), 1 worker", "/s", (r) => r.egress?.proxied.rate);
  add("18 egress", "proxied / direct", "x", (r) => r.egress?.ratio);
  steadyFigures(add);
  return out;
}

function fmt(v: number, unit: string): string {
  if (!Number.isFinite(v)) return "n/a";
  if (unit === "x") return v.toFixed(2);
  if (unit === "%") return v.toFixed(0);
  if (unit === "ms") return v < 10 ? v.toFixed(2) : v.toFixed(1);
  return Math.round(v).toLocaleString("en-US");
}

export function table(figs: Figure[], notes: string[] = []): string {
  const header = ["scenario", "figure", "median", "unit", "runs", "target", "met"];
  const rows = figs.map((f) => [
    f.scenario,
    f.figure,
    fmt(f.median, f.unit),
    f.unit,
    f.runs.map((v) => fmt(v, f.unit)).join(" "),
    f.target ?? "",
    f.met === null ? "" : f.met ? "yes" : "NO",
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i]!)).join(" | ")} |`;
  return [
    line(header),
    `|${widths.map((w) => "-".repeat(w + 2)).join("|")}|`,
    ...rows.map(line),
    ...notes.map((n) => `  ${n}`),
  ].join("\n");
}
