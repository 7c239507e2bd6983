/** dlq list | analyze | requeue: dead letters, read and handed back to the queue. */
import { type Command, InvalidArgumentError } from "commander";
import { boundedArg, intArg, limitArg, qs, timeArg } from "../args.ts";
import { cliIo } from "../io.ts";
import { ExitCode, type OutputOptions, print, table } from "../output.ts";
import { onServer, serverCommand } from "../server-command.ts";

// biome-ignore lint/suspicious/noExplicitAny: API responses are rendered field by field
type Json = any;

interface DlqFilter {
  app?: string;
  endpoint?: string;
  statusCode?: number;
  errorKind?: string;
  since?: string;
  until?: string;
}

const filterQs = (o: DlqFilter) => ({
  app_id: o.app,
  endpoint_id: o.endpoint,
  status_code: o.statusCode,
  error_kind: o.errorKind,
  since: o.since,
  until: o.until,
});

/** An HTTP status, within the bounds of the API's status_code filter. */
const statusCodeArg = boundedArg(intArg, 100, 599, String);

const withFilters = (c: Command) =>
  c
    .option("--app <app>", "application id or uid")
    .option("--endpoint <endpoint>", "endpoint id or uid")
    .option("--status-code <code>", "last HTTP status (100..599)", statusCodeArg)
    .option("--error-kind <kind>", "e.g. timeout, credentials, http")
    .option("--since <time>", "ISO time or age (30m, 2h, 7d)", timeArg)
    .option("--until <time>", "ISO time or age", timeArg);

interface RequeueOptions extends OutputOptions {
  delivery?: string;
  endpoint?: string;
  since?: string;
  app?: string;
  includeFailed?: boolean;
  dryRun?: boolean;
}

const pace = (perSecond: number | null) =>
  perSecond === null ? "no rate limit" : `${Number(perSecond.toFixed(3))}/s`;

export function registerDeadLetterCommands(program: Command): void {
  const dlq = program.command("dlq").description("dead letters: list, analyze, requeue");

  withFilters(serverCommand(dlq, "list", "dead letters, newest first"))
    .option("--limit <n>", "at most this many (1..250)", limitArg, 50)
    .action(
      onServer(async (server, o: OutputOptions & DlqFilter & { limit: number }) => {
        const page: Json = await server.call(
          "GET",
          `/api/v1/dead-letters${qs({ ...filterQs(o), limit: o.limit })}`,
        );
        print(o, page.data, () =>
          page.data.length === 0
            ? "no dead letters"
            : table(
                ["delivery", "message", "endpoint", "event", "attempts", "status", "error", "died"],
                page.data.map((d: Json) => [
                  d.deliveryId,
                  d.messageId,
                  d.endpointId,
                  d.eventType,
                  d.attempts,
                  d.statusCode,
                  d.error,
                  d.deadAt,
                ]),
              ),
        );
        return ExitCode.ok;
      }),
    );

  withFilters(
    serverCommand(
      dlq,
      "analyze",
      "per endpoint: counts, common errors, the pattern and what to do",
    ),
  ).action(
    onServer(async (server, o: OutputOptions & DlqFilter) => {
      const { data }: Json = await server.call(
        "GET",
        `/api/v1/dead-letters/analysis${qs(filterQs(o))}`,
      );
      print(o, data, () =>
        data.length === 0
          ? "no dead letters"
          : data
              .map((a: Json) =>
                [
                  `${a.endpointId} ${a.url}`,
                  `  dead: ${a.deadCount}, avg attempts ${a.averageAttempts}, first ${a.firstDeadAt}, last ${a.lastDeadAt}`,
                  `  most common: ${a.mostCommonError ?? "-"} (status ${a.mostCommonStatusCode ?? "-"})`,
                  `  pattern: ${a.pattern}`,
                  `  action: ${a.suggestedAction}`,
                ].join("\n"),
              )
              .join("\n\n"),
      );
      return ExitCode.ok;
    }),
  );

  serverCommand(
    dlq,
    "requeue",
    "requeue dead letters (fresh attempt budget, same message id), endpoint by endpoint",
  )
    .option("--delivery <id>", "one delivery: its id (dlv_...) or its number from a log")
    .option("--endpoint <endpoint>", "every dead letter of this endpoint (id or uid)")
    .option("--since <time>", "everything that died since (ISO time or age: 2h, 7d)", timeArg)
    .option("--app <app>", "only this application")
    .option("--include-failed", "also deliveries waiting for a retry")
    .option("--dry-run", "say how many would be requeued, and at what pace; change nothing")
    .action(
      onServer(async (server, o: RequeueOptions) => {
        if (!o.delivery && !o.endpoint && !o.since) {
          throw new InvalidArgumentError("say what to requeue: --delivery, --endpoint or --since");
        }
        if (o.delivery) {
          if (o.dryRun) throw new InvalidArgumentError("--dry-run plans --endpoint or --since");
          const r: Json = await server.call("POST", "/api/v1/dead-letters/requeue", {
            deliveryId: o.delivery,
          });
          print(o, r, () => `requeued ${r.requeued}`);
          return ExitCode.ok;
        }
        const plan: Json = await server.call(
          "GET",
          `/api/v1/dead-letters/requeue-plan${qs({
            app_id: o.app,
            endpoint_id: o.endpoint,
            since: o.since,
            include_failed: o.includeFailed,
          })}`,
        );
        if (o.dryRun) {
          print(o, plan, () =>
            plan.endpoints.length === 0
              ? "nothing to requeue"
              : `${table(
                  ["endpoint", "deliveries", "pace"],
                  plan.endpoints.map((e: Json) => [e.endpointId, e.deliveries, pace(e.perSecond)]),
                )}\n${plan.total} deliveries of ${plan.endpoints.length} endpoints would be requeued`,
          );
          return ExitCode.ok;
        }
        // Endpoint by endpoint, so a big requeue shows progress; each is one statement.
        const endpoints: string[] = plan.endpoints.map((e: Json) => e.endpointId);
        let total = 0;
        for (const [i, endpointId] of endpoints.entries()) {
          const r: Json = await server.call("POST", "/api/v1/dead-letters/requeue", {
            endpointId,
            ...(o.since && { since: o.since }),
            ...(o.app && { appId: o.app }),
            ...(o.includeFailed && { includeFailed: true }),
          });
          total += r.requeued;
          if (!o.json)
            cliIo().stderr.write(
              `[${i + 1}/${endpoints.length}] ${endpointId}: requeued ${r.requeued} (total ${total})\n`,
            );
        }
        print(
          o,
          { requeued: total, endpoints: endpoints.length },
          () => `requeued ${total} deliveries of ${endpoints.length} endpoints`,
        );
        return ExitCode.ok;
      }),
    );
}
