/**
 * attempts <app> --msg | --endpoint: the HTTP attempts of a message or to an endpoint,
 * newest first, through the API's list routes and their iterator
 * (GET /api/v1/app/{app}/attempt/msg/{msg}, .../attempt/endpoint/{endpoint}).
 */
import { type Command, InvalidArgumentError } from "commander";
import { enc, limitArg, timeArg } from "../args.ts";
import { ExitCode, type OutputOptions, print } from "../output.ts";
import { onServer, serverCommand } from "../server-command.ts";
import { attemptsTable, nextPageHint, query } from "./message-lookup.ts";

// biome-ignore lint/suspicious/noExplicitAny: API responses are rendered field by field
type Json = any;

/** The API's attempt status filter: Svix's MessageStatus numbers of an attempt. */
const RESULTS = { success: 0, fail: 2 } as const;
const resultArg = (v: string): number => {
  const n = RESULTS[v as keyof typeof RESULTS];
  if (n === undefined) throw new InvalidArgumentError("expected success or fail");
  return n;
};

interface AttemptOptions extends OutputOptions {
  msg?: string;
  endpoint?: string;
  result?: number;
  since?: string;
  until?: string;
  limit: number;
  iterator?: string;
}

/** The attempts route and query of the options: by message (and endpoint), or by endpoint. */
export function attemptsPath(app: string, o: Omit<AttemptOptions, "json">): string {
  if (!o.msg && !o.endpoint)
    throw new InvalidArgumentError("say whose attempts: --msg or --endpoint");
  const base = `/api/v1/app/${enc(app)}/attempt`;
  const path = o.msg ? `${base}/msg/${enc(o.msg)}` : `${base}/endpoint/${enc(o.endpoint!)}`;
  return `${path}${query({
    endpoint_id: o.msg ? o.endpoint : undefined,
    status: o.result,
    after: o.since,
    before: o.until,
    limit: o.limit,
    iterator: o.iterator,
  })}`;
}

export function registerAttemptCommands(program: Command): void {
  serverCommand(
    program,
    "attempts <app>",
    "HTTP attempts of a message or to an endpoint, newest first; a page at a time",
  )
    .option("--msg <message>", "the attempts of this message (id or eventId)")
    .option(
      "--endpoint <endpoint>",
      "the attempts to this endpoint (id or uid); with --msg, of both",
    )
    .option("--result <result>", "only success or fail", resultArg)
    .option("--since <time>", "started after this ISO time or age (30m, 2h, 7d)", timeArg)
    .option("--until <time>", "started before this ISO time or age", timeArg)
    .option("--limit <n>", "at most this many (1..250)", limitArg, 50)
    .option("--iterator <iterator>", "the next page: the iterator a previous page printed")
    .action(
      onServer(async (server, app: string, o: AttemptOptions) => {
        const page: Json = await server.call("GET", attemptsPath(app, o));
        print(o, page, () =>
          page.data.length === 0
            ? "no attempts"
            : `${attemptsTable(page.data)}${nextPageHint(page)}`,
        );
        return ExitCode.ok;
      }),
    );
}
