/** metrics: a readable summary of the server's /metrics (metrics-summary.ts), or --json. */
import type { Command } from "commander";
import { loadClientConfig } from "../../config.ts";
import { ApiError } from "../../errors.ts";
import { cliIo } from "../io.ts";
import { type MetricsSummary, summarizeMetrics } from "../metrics-summary.ts";
import { duration, ExitCode, type OutputOptions, print, table } from "../output.ts";
import { onServer, serverCommand } from "../server-command.ts";

const counts = (r: Record<string, number>) =>
  Object.keys(r).length === 0
    ? "none"
    : Object.entries(r)
        .map(([k, v]) => `${k} ${v}`)
        .join(", ");

/** The summary for a person: totals, latency, the queue, then the endpoints' latency. */
export function metricsText(m: MetricsSummary): string {
  const lines = table(
    ["metric", "value"],
    [
      ["deliveries (since start)", counts(m.deliveries)],
      ["attempts (since start)", counts(m.attempts)],
      ["failed attempts", m.failedAttempts],
      [
        "attempt latency",
        m.latency.count
          ? `p50 ${duration(m.latency.p50Ms)}, p95 ${duration(m.latency.p95Ms)}, p99 ${duration(m.latency.p99Ms)}, mean ${duration(m.latency.meanMs)} (${m.latency.count} attempts)`
          : "no attempts yet",
      ],
      ["queue depth", counts(m.queue)],
      [
        "oldest pending",
        m.oldestPendingSeconds === null ? null : duration(m.oldestPendingSeconds * 1_000),
      ],
      ["dead letters", m.deadLetters],
      ["circuits", counts(m.circuits)],
      ["endpoints paused", m.endpointsPaused],
      [
        "open alerts",
        counts(Object.fromEntries(Object.entries(m.alertsOpen).filter(([, v]) => v))),
      ],
      ["worker in flight", m.workerInFlight],
    ],
  );
  const parts = [lines];
  if (m.databaseRead === false)
    parts.push("(the server could not read its database for this scrape: queue figures are 0)");
  if (m.endpoints.length)
    parts.push(
      "",
      "latency per endpoint (since start):",
      table(
        ["endpoint", "attempts", "p50", "p95", "p99", "mean"],
        m.endpoints.map((e) => [
          e.endpoint,
          e.count,
          duration(e.p50Ms),
          duration(e.p95Ms),
          duration(e.p99Ms),
          duration(e.meanMs),
        ]),
      ),
    );
  if (m.apps.length)
    parts.push(
      "",
      "deliveries per app (since start):",
      table(
        ["app", "deliveries"],
        m.apps.map((a) => [a.app, counts(a.deliveries)]),
      ),
    );
  return parts.join("\n");
}

export function registerMetricsCommand(program: Command): void {
  serverCommand(
    program,
    "metrics",
    "a summary of the server's /metrics: deliveries, failures, latency percentiles, queue",
  )
    .option(
      "--metrics-token <token>",
      "the server's HOOKRELAY_METRICS_TOKEN, when /metrics requires one (default: the same variable here)",
    )
    .action(
      onServer(async (server, o: OutputOptions & { metricsToken?: string }) => {
        const token = o.metricsToken ?? loadClientConfig(cliIo().env).metricsToken;
        let text: string;
        try {
          text = await server.text("/metrics", token ? `Bearer ${token}` : null);
        } catch (err) {
          if (err instanceof ApiError && err.status === 401)
            throw new ApiError(
              401,
              err.code,
              token
                ? `the server at ${server.url} refused the metrics token (401): it is not its HOOKRELAY_METRICS_TOKEN`
                : `the server at ${server.url} requires its metrics token for /metrics (401): pass --metrics-token or set HOOKRELAY_METRICS_TOKEN`,
            );
          throw err;
        }
        const summary = summarizeMetrics(text);
        print(o, summary, () => metricsText(summary));
        return ExitCode.ok;
      }),
    );
}
