/** status, alerts, endpoints, slow: what the server measures, as tables or JSON. */
import type { Command } from "commander";
import { type AppNames, appNames } from "../app-names.ts";
import { qs } from "../args.ts";
import { duration, ExitCode, type OutputOptions, print, table } from "../output.ts";
import { onServer, serverCommand } from "../server-command.ts";

// biome-ignore lint/suspicious/noExplicitAny: API responses are rendered field by field
type Json = any;

const healthTable = (rows: Json[], apps: AppNames) =>
  table(
    [
      "endpoint",
      "app",
      "url",
      "circuit",
      "p50",
      "p95",
      "p99",
      "samples",
      "success",
      "pending",
      "dead",
    ],
    rows.map((h) => [
      h.endpointId,
      apps.of(h.appId),
      h.url,
      h.circuit.state,
      duration(h.latency.p50Ms),
      duration(h.latency.p95Ms),
      duration(h.latency.p99Ms),
      h.latency.samples,
      h.latency.successRate === null ? "-" : `${(h.latency.successRate * 100).toFixed(1)}%`,
      h.queue.pending,
      h.queue.deadLetter,
    ]),
  );

export function registerHealthCommands(program: Command): void {
  serverCommand(program, "status", "the health summary: backlog, oldest pending, last hour")
    .option("--app <app>", "one application (id or uid)")
    .action(
      onServer(async (server, o: OutputOptions & { app?: string }) => {
        const s: Json = await server.call("GET", `/api/v1/health/summary${qs({ app_id: o.app })}`);
        print(o, s, () =>
          table(
            ["metric", "value"],
            [
              [
                "oldest pending",
                s.oldestPending
                  ? `${duration(s.oldestPending.ageMs)} (${s.oldestPending.at})`
                  : "none",
              ],
              ["pending", s.pending],
              ["awaiting retry", s.awaitingRetry],
              ["in flight", s.inFlight],
              ["dead letter", s.deadLetter],
              ["delivered last hour", s.deliveredLastHour],
              ["failed last hour", s.failedLastHour],
              ["avg delivery last hour", duration(s.avgDeliveryMsLastHour)],
            ],
          ),
        );
        return ExitCode.ok;
      }),
    );

  serverCommand(program, "alerts", "open alerts; exits 3 when any is critical")
    .option("--app <app>", "one application (id or uid)")
    .action(
      onServer(async (server, o: OutputOptions & { app?: string }) => {
        const { data }: Json = await server.call("GET", `/api/v1/alerts${qs({ app_id: o.app })}`);
        print(o, data, () =>
          data.length === 0
            ? "no alerts"
            : table(
                ["severity", "kind", "subject", "since", "message"],
                data.map((a: Json) => [a.severity, a.kind, a.subject.id, a.since, a.message]),
              ),
        );
        return data.some((a: Json) => a.severity === "critical") ? ExitCode.critical : ExitCode.ok;
      }),
    );

  serverCommand(
    program,
    "endpoints",
    "every endpoint's health: circuit, latency percentiles, backlog",
  )
    .option("--app <app>", "one application (id or uid)")
    .option("--state <state>", "closed, open or half_open")
    .action(
      onServer(async (server, o: OutputOptions & { app?: string; state?: string }) => {
        const page: Json = await server.call(
          "GET",
          `/api/v1/health/endpoints${qs({ app_id: o.app, state: o.state, limit: 250 })}`,
        );
        const apps = await appNames(
          server,
          page.data.map((h: Json) => h.appId),
        );
        print(o, page.data, () =>
          page.data.length ? healthTable(page.data, apps) : "no endpoints",
        );
        return ExitCode.ok;
      }),
    );

  serverCommand(program, "slow", "endpoints whose p95 is over the server's slow threshold").action(
    onServer(async (server, o: OutputOptions) => {
      const page: Json = await server.call(
        "GET",
        `/api/v1/health/endpoints${qs({ slow: true, limit: 250 })}`,
      );
      const apps = await appNames(
        server,
        page.data.map((h: Json) => h.appId),
      );
      print(o, page.data, () =>
        page.data.length ? healthTable(page.data, apps) : "no slow endpoints",
      );
      return ExitCode.ok;
    }),
  );
}
