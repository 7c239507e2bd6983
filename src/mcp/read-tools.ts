/**
 * The MCP server's read tools (docs/mcp.md), for any key: each is one or a few requests to
 * the hookrelay API with the key's own reach (an app key sees its app only), answered as
 * the API's JSON.
 */
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { z } from "zod";
import { enc, qs, timeArg } from "../cli/args.ts";
import { attemptsPath } from "../cli/commands/attempts.ts";
import { messageDetails, query } from "../cli/commands/message-lookup.ts";
import type { ServerConnection } from "../cli/connection.ts";
import { DeliveryStatus } from "../domain/delivery-states.ts";
import { HookRelayError } from "../errors.ts";
import { answer } from "./tool-result.ts";

const time = (what: string) =>
  z.string().describe(`${what}: an ISO time, or an age such as 30m, 2h, 7d`).optional();
const isoOf = (v: string | undefined) => (v === undefined ? undefined : timeArg(v));
const app = z.string().describe("the application: its id (app_...) or uid");
const appOptional = app.optional();
const limit = z
  .number()
  .int()
  .min(1)
  .max(250)
  .optional()
  .describe("page size, 1..250 (default 50)");
const iterator = z
  .string()
  .optional()
  .describe("the next page: the `iterator` a previous answer gave (when `done` was false)");
const READ = { readOnlyHint: true, openWorldHint: false } as const;

const deadLetterFilter = {
  app: appOptional,
  endpoint: z.string().optional().describe("one endpoint: its id or uid"),
  statusCode: z.number().int().optional().describe("the last HTTP status"),
  errorKind: z.string().optional().describe("e.g. timeout, credentials, http"),
  since: time("died since"),
  until: time("died before"),
};
type DeadLetterFilter = {
  app?: string;
  endpoint?: string;
  statusCode?: number;
  errorKind?: string;
  since?: string;
  until?: string;
};
const deadLetterQuery = (a: DeadLetterFilter) => ({
  app_id: a.app,
  endpoint_id: a.endpoint,
  status_code: a.statusCode,
  error_kind: a.errorKind,
  since: isoOf(a.since),
  until: isoOf(a.until),
});

export function registerReadTools(mcp: McpServer, server: ServerConnection): void {
  mcp.registerTool(
    "health_summary",
    {
      title: "Health summary",
      description:
        "The delivery health of everything (or one app): backlog by state, the oldest pending delivery and its age, dead letters, delivered and failed in the last hour, the mean attempt latency, and the open alerts with their severity.",
      inputSchema: { app: appOptional },
      annotations: READ,
    },
    (a) =>
      answer(async () => {
        const [summary, alerts] = await Promise.all([
          server.call("GET", `/api/v1/health/summary${qs({ app_id: a.app })}`),
          server.call<{ data: unknown[] }>("GET", `/api/v1/alerts${qs({ app_id: a.app })}`),
        ]);
        return { summary, alerts: alerts.data };
      }),
  );

  mcp.registerTool(
    "endpoint_health",
    {
      title: "Endpoint health",
      description:
        "Endpoints' health: circuit state, latency percentiles (p50, p95, p99 in ms over the server's window), success rate and backlog. With `endpoint` (and `app`), one endpoint with its circuit history; otherwise a page of every endpoint, optionally only open circuits or only the slow ones.",
      inputSchema: {
        app: appOptional,
        endpoint: z.string().optional().describe("one endpoint (id or uid); needs `app`"),
        state: z.enum(["closed", "open", "half_open"]).optional().describe("circuit state"),
        slowOnly: z.boolean().optional().describe("only endpoints over the slow p95 threshold"),
        limit,
        iterator,
      },
      annotations: READ,
    },
    (a) =>
      answer(async () => {
        if (a.endpoint) {
          if (!a.app) throw new HookRelayError("bad_request", "give `app` with `endpoint`");
          return server.call("GET", `/api/v1/app/${enc(a.app)}/endpoint/${enc(a.endpoint)}/health`);
        }
        return server.call(
          "GET",
          `/api/v1/health/endpoints${qs({
            app_id: a.app,
            state: a.state,
            slow: a.slowOnly,
            limit: a.limit ?? 50,
            iterator: a.iterator,
          })}`,
        );
      }),
  );

  mcp.registerTool(
    "dead_letter_analysis",
    {
      title: "Dead-letter analysis",
      description:
        "Per endpoint with dead letters, most first: how many, the most common error and status code, first and last death, average attempts, the pattern (missing_field, body_rule, gone, credentials, rate_limited, timeouts, outage, intermittent, mixed) and the suggested action.",
      inputSchema: deadLetterFilter,
      annotations: READ,
    },
    (a) =>
      answer(() => server.call("GET", `/api/v1/dead-letters/analysis${qs(deadLetterQuery(a))}`)),
  );

  mcp.registerTool(
    "list_dead_letters",
    {
      title: "Dead letters",
      description:
        "Dead letters, the newest death first: delivery id, message, endpoint, event type, attempts, last status and error, time of death. Paged: pass `iterator` from the last answer.",
      inputSchema: { ...deadLetterFilter, limit, iterator },
      annotations: READ,
    },
    (a) =>
      answer(() =>
        server.call(
          "GET",
          `/api/v1/dead-letters${qs({ ...deadLetterQuery(a), limit: a.limit ?? 50, iterator: a.iterator })}`,
        ),
      ),
  );

  mcp.registerTool(
    "get_message",
    {
      title: "Message lookup",
      description:
        "One message by its id (msg_...) or the producer's eventId: its payload, its delivery to each endpoint (state, attempts, last status and error, next attempt) and its attempts, newest first.",
      inputSchema: { app, message: z.string().describe("the message id or eventId") },
      annotations: READ,
    },
    (a) => answer(() => messageDetails(server, a.app, a.message)),
  );

  mcp.registerTool(
    "list_messages",
    {
      title: "Messages",
      description:
        "An application's messages, newest first, without payloads, filtered by event type, channel, delivery state (a message with a delivery in one of the states; with `endpoint`, its delivery to that endpoint), endpoint and creation time. Paged.",
      inputSchema: {
        app,
        eventTypes: z.array(z.string()).optional(),
        channel: z.string().optional(),
        status: z
          .array(z.enum(Object.values(DeliveryStatus) as [string, ...string[]]))
          .optional()
          .describe("delivery states"),
        endpoint: z.string().optional().describe("only messages sent to this endpoint (id or uid)"),
        since: time("created after"),
        until: time("created before"),
        limit,
        iterator,
      },
      annotations: READ,
    },
    (a) =>
      answer(() =>
        server.call(
          "GET",
          `/api/v1/app/${enc(a.app)}/msg${query({
            event_types: a.eventTypes,
            channel: a.channel,
            delivery_status: a.status,
            endpoint_id: a.endpoint,
            after: isoOf(a.since),
            before: isoOf(a.until),
            limit: a.limit ?? 50,
            iterator: a.iterator,
            with_content: "false",
          })}`,
        ),
      ),
  );

  mcp.registerTool(
    "get_attempt",
    {
      title: "Attempt lookup",
      description:
        "One HTTP attempt of a message: URL, status code, response (first KiB, sensitive values masked), duration, error kind and error, trigger.",
      inputSchema: {
        app,
        message: z.string().describe("the message id or eventId"),
        attempt: z.string().describe("the attempt id (atmpt_...)"),
      },
      annotations: READ,
    },
    (a) =>
      answer(() =>
        server.call(
          "GET",
          `/api/v1/app/${enc(a.app)}/msg/${enc(a.message)}/attempt/${enc(a.attempt)}`,
        ),
      ),
  );

  mcp.registerTool(
    "list_attempts",
    {
      title: "Attempts",
      description:
        "HTTP attempts of a message or to an endpoint (or of a message to one endpoint), newest first, optionally only successes or failures, within a time window. Paged.",
      inputSchema: {
        app,
        message: z.string().optional().describe("the message id or eventId"),
        endpoint: z.string().optional().describe("the endpoint id or uid"),
        result: z.enum(["success", "fail"]).optional(),
        since: time("started after"),
        until: time("started before"),
        limit,
        iterator,
      },
      annotations: READ,
    },
    (a) =>
      answer(() => {
        if (!a.message && !a.endpoint)
          throw new HookRelayError("bad_request", "say whose attempts: `message` or `endpoint`");
        return server.call(
          "GET",
          attemptsPath(a.app, {
            msg: a.message,
            endpoint: a.endpoint,
            result: a.result === undefined ? undefined : a.result === "success" ? 0 : 2,
            since: isoOf(a.since),
            until: isoOf(a.until),
            limit: a.limit ?? 50,
            iterator: a.iterator,
          }),
        );
      }),
  );
}
