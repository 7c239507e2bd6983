/**
 * msg list | get: an application's messages, filtered and paged through the API's own
 * iterator (GET /api/v1/app/{app}/msg), and one message with its payload, its delivery to
 * each endpoint and a summary of its attempts.
 */
import { type Command, InvalidArgumentError } from "commander";
import { DeliveryStatus } from "../../domain/delivery-states.ts";
import { appNames } from "../app-names.ts";
import { enc, limitArg, list, PAGE_LIMIT, timeArg } from "../args.ts";
import type { ServerConnection } from "../connection.ts";
import { duration, ExitCode, type OutputOptions, print, table } from "../output.ts";
import { onServer, serverCommand } from "../server-command.ts";

// biome-ignore lint/suspicious/noExplicitAny: API responses are rendered field by field
type Json = any;

const STATUSES: readonly string[] = Object.values(DeliveryStatus);
/** Comma-separated and repeatable delivery states, each checked against the state table. */
const statusArg = (v: string, previous: string[] = []) => {
  const given = list(v);
  for (const s of given)
    if (!STATUSES.includes(s))
      throw new InvalidArgumentError(`expected delivery states among ${STATUSES.join(", ")}`);
  return [...previous, ...given];
};
const repeated = (v: string, previous: string[] = []) => [...previous, ...list(v)];

/** A query string with repeated parameters for arrays. */
export function query(params: Record<string, string | number | string[] | undefined>): string {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v === undefined) continue;
    for (const one of Array.isArray(v) ? v : [v]) p.append(k, String(one));
  }
  const s = p.toString();
  return s ? `?${s}` : "";
}

/** The line after a page that has more: how to ask for the next one. */
export function nextPageHint(page: { done: boolean; iterator: string | null }): string {
  return page.done || !page.iterator ? "" : `\nmore: --iterator ${page.iterator}`;
}

interface ListOptions extends OutputOptions {
  eventType?: string[];
  channel?: string;
  status?: string[];
  endpoint?: string;
  since?: string;
  until?: string;
  limit: number;
  iterator?: string;
}

/** The message, its deliveries and its attempts (newest first, up to the API's page). */
export async function messageDetails(server: ServerConnection, app: string, msg: string) {
  const base = `/api/v1/app/${enc(app)}`;
  const message: Json = await server.call("GET", `${base}/msg/${enc(msg)}`);
  const [deliveries, attempts]: Json[] = await Promise.all([
    server.call("GET", `${base}/msg/${enc(message.id)}/endpoint?limit=${PAGE_LIMIT.max}`),
    server.call("GET", `${base}/attempt/msg/${enc(message.id)}?limit=${PAGE_LIMIT.max}`),
  ]);
  const a: Json[] = attempts.data;
  return {
    message,
    deliveries: deliveries.data,
    attempts: {
      total: a.length,
      complete: attempts.done,
      succeeded: a.filter((x) => x.statusText === "success").length,
      failed: a.filter((x) => x.statusText !== "success").length,
      data: a,
    },
  };
}

const deliveriesTable = (rows: Json[]) =>
  table(
    [
      "endpoint",
      "uid",
      "status",
      "attempts",
      "last code",
      "last error",
      "next attempt",
      "delivered",
    ],
    rows.map((d) => [
      d.id,
      d.uid,
      d.deliveryStatus,
      d.attempts,
      d.lastStatusCode,
      d.lastError,
      d.nextAttempt,
      d.deliveredAt,
    ]),
  );

/** Attempts as a table: newest first. */
export const attemptsTable = (rows: Json[]) =>
  table(
    [
      "attempt",
      "started",
      "message",
      "endpoint",
      "#",
      "trigger",
      "result",
      "code",
      "took",
      "error",
    ],
    rows.map((a) => [
      a.id,
      a.timestamp,
      a.msgId,
      a.endpointId,
      a.attemptNumber,
      a.trigger,
      a.statusText,
      a.responseStatusCode || null,
      duration(a.responseDurationMs),
      a.error ?? a.errorKind,
    ]),
  );

export function registerMessageLookupCommands(program: Command): void {
  const msg = program.command("msg").description("messages of an application: list, get");

  serverCommand(msg, "list <app>", "messages, newest first, filtered; a page at a time")
    .option(
      "--event-type <types>",
      "only these event types (comma-separated, repeatable)",
      repeated,
    )
    .option("--channel <channel>", "only messages of this channel")
    .option(
      "--status <states>",
      `only messages with a delivery in these states: ${STATUSES.join(", ")} (comma-separated, repeatable; with --endpoint, its delivery to that endpoint)`,
      statusArg,
    )
    .option("--endpoint <endpoint>", "only messages sent to this endpoint (id or uid)")
    .option("--since <time>", "created after this ISO time or age (30m, 2h, 7d)", timeArg)
    .option("--until <time>", "created before this ISO time or age", timeArg)
    .option("--limit <n>", `at most this many (${PAGE_LIMIT.min}..${PAGE_LIMIT.max})`, limitArg, 50)
    .option("--iterator <iterator>", "the next page: the iterator a previous page printed")
    .action(
      onServer(async (server, app: string, o: ListOptions) => {
        const page: Json = await server.call(
          "GET",
          `/api/v1/app/${enc(app)}/msg${query({
            event_types: o.eventType,
            channel: o.channel,
            delivery_status: o.status,
            endpoint_id: o.endpoint,
            after: o.since,
            before: o.until,
            limit: o.limit,
            iterator: o.iterator,
            with_content: "false",
          })}`,
        );
        print(o, page, () =>
          page.data.length === 0
            ? "no messages"
            : `${table(
                ["message", "created", "event type", "event id", "channels", "ordering key"],
                page.data.map((m: Json) => [
                  m.id,
                  m.timestamp,
                  m.eventType,
                  m.eventId,
                  m.channels?.join(","),
                  m.orderingKey,
                ]),
              )}${nextPageHint(page)}`,
        );
        return ExitCode.ok;
      }),
    );

  serverCommand(
    msg,
    "get <app> <message>",
    "one message (by id or eventId): payload, its delivery to each endpoint, its attempts",
  ).action(
    onServer(async (server, app: string, id: string, o: OutputOptions) => {
      const d = await messageDetails(server, app, id);
      const m: Json = d.message;
      const names = await appNames(server, [app]);
      print(o, d, () =>
        [
          table(
            ["field", "value"],
            [
              ["message", m.id],
              ["app", names.of(app)],
              ["event type", m.eventType],
              ["event id", m.eventId],
              ["created", m.timestamp],
              ["channels", m.channels?.join(",")],
              ["tags", m.tags?.join(",")],
              ["ordering key", m.orderingKey],
            ],
          ),
          "",
          "payload:",
          JSON.stringify(m.payload, null, 2),
          "",
          d.deliveries.length === 0
            ? "no deliveries (no endpoint took its event type)"
            : `deliveries:\n${deliveriesTable(d.deliveries)}`,
          "",
          `attempts: ${d.attempts.total}${d.attempts.complete ? "" : "+"} (${d.attempts.succeeded} succeeded, ${d.attempts.failed} failed)`,
          ...(d.attempts.total ? [attemptsTable(d.attempts.data.slice(0, 20))] : []),
          ...(d.attempts.total > 20
            ? [`(the newest 20; \`hookrelay attempts ${app} --msg ${m.id}\` lists them all)`]
            : []),
        ].join("\n"),
      );
      return ExitCode.ok;
    }),
  );
}
