/**
 * The MCP server's actions (docs/mcp.md), listed only for an admin key: requeue dead
 * letters, replay an endpoint's window, disable or enable an endpoint. Each is a dry run
 * first: called without `confirm` it changes nothing and answers what it would do and a
 * plan token (plan-tokens.ts); called again with the same arguments, `confirm: true` and
 * that token, it acts.
 */
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { z } from "zod";
import { enc, qs, timeArg } from "../cli/args.ts";
import type { ServerConnection } from "../cli/connection.ts";
import { type BackgroundTask, followTask } from "../cli/task-follow.ts";
import { EITHER_MODE_TEXT, whileDisabledText } from "../domain/while-disabled.ts";
import { HookRelayError } from "../errors.ts";
import type { PlanTokens } from "./plan-tokens.ts";
import { answer } from "./tool-result.ts";

// biome-ignore lint/suspicious/noExplicitAny: API responses are read field by field
type Json = any;

const confirmShape = {
  confirm: z
    .boolean()
    .optional()
    .describe("true to act; leave it out first for a dry run that answers a planToken"),
  planToken: z.string().optional().describe("with confirm: the planToken of the dry run"),
};
const ACTION = { readOnlyHint: false, destructiveHint: false, openWorldHint: false } as const;
/** How often a dry-run replay's counting task is read until it has its total (ms). */
const DRY_RUN_POLL_MS = 200;

/**
 * One action: without confirm, `plan` (which changes nothing) and a token when there is
 * something to do; with confirm and a fitting token, `act`.
 */
async function dryRunFirst(
  tokens: PlanTokens,
  tool: string,
  args: Record<string, unknown> & { confirm?: boolean; planToken?: string },
  plan: () => Promise<{ nothingToDo: boolean; plan: unknown }>,
  act: () => Promise<unknown>,
): Promise<unknown> {
  if (args.confirm) {
    tokens.take(tool, args, args.planToken);
    return { done: true, result: await act() };
  }
  const p = await plan();
  if (p.nothingToDo) return { dryRun: true, plan: p.plan, nothingToDo: true };
  return {
    dryRun: true,
    plan: p.plan,
    ...tokens.issue(tool, args),
    next: `call ${tool} again with the same arguments, confirm: true and this planToken`,
  };
}

export function registerActionTools(
  mcp: McpServer,
  server: ServerConnection,
  tokens: PlanTokens,
): void {
  mcp.registerTool(
    "requeue_dead_letters",
    {
      title: "Requeue dead letters",
      description:
        "Hand dead letters back to the queue with a fresh attempt budget (same message id), at the pace of each endpoint's rate limit: one delivery, every dead letter of an endpoint, or everything that died since a time. A dry run first: it answers how many per endpoint and a planToken; then call again with confirm: true and the planToken.",
      inputSchema: {
        delivery: z.string().optional().describe("one delivery id (dlv_...)"),
        endpoint: z.string().optional().describe("every dead letter of this endpoint (id or uid)"),
        since: z.string().optional().describe("everything that died since: ISO time or age (2h)"),
        app: z.string().optional().describe("only this application (id or uid)"),
        includeFailed: z.boolean().optional().describe("also deliveries waiting for a retry"),
        ...confirmShape,
      },
      annotations: ACTION,
    },
    (a) =>
      answer(async () => {
        if (!a.delivery && !a.endpoint && !a.since)
          throw new HookRelayError(
            "bad_request",
            "say what to requeue: delivery, endpoint or since",
          );
        const since = a.since === undefined ? undefined : timeArg(a.since);
        const tool = "requeue_dead_letters";
        if (a.delivery)
          return dryRunFirst(
            tokens,
            tool,
            a,
            async () => ({ nothingToDo: false, plan: { deliveries: [a.delivery], total: 1 } }),
            () => server.call("POST", "/api/v1/dead-letters/requeue", { deliveryId: a.delivery }),
          );
        const planOf = () =>
          server.call<Json>(
            "GET",
            `/api/v1/dead-letters/requeue-plan${qs({
              app_id: a.app,
              endpoint_id: a.endpoint,
              since,
              include_failed: a.includeFailed,
            })}`,
          );
        return dryRunFirst(
          tokens,
          tool,
          a,
          async () => {
            const plan = await planOf();
            return { nothingToDo: plan.total === 0, plan };
          },
          async () => {
            // endpoint by endpoint, as the CLI does: each one statement
            const plan = await planOf();
            let requeued = 0;
            for (const e of plan.endpoints as { endpointId: string }[]) {
              const r = await server.call<{ requeued: number }>(
                "POST",
                "/api/v1/dead-letters/requeue",
                {
                  endpointId: e.endpointId,
                  ...(since && { since }),
                  ...(a.app && { appId: a.app }),
                  ...(a.includeFailed && { includeFailed: true }),
                },
              );
              requeued += r.requeued;
            }
            return { requeued, endpoints: plan.endpoints.length };
          },
        );
      }),
  );

  mcp.registerTool(
    "replay_endpoint",
    {
      title: "Replay an endpoint's window",
      description:
        "Send an endpoint's messages of a time window again, as a paced background task of the server: recover (its failed and dead-lettered deliveries), replay-missing (what it never got) or bulk-replay (everything matching the filters). A dry run first: the server counts what it would send and this answers the count and a planToken; then call again with confirm: true and the planToken, which starts the task (follow it with the task id).",
      inputSchema: {
        app: z.string().describe("the application (id or uid)"),
        endpoint: z.string().describe("the endpoint (id or uid)"),
        kind: z.enum(["recover", "replay-missing", "bulk-replay"]),
        since: z.string().describe("messages created since: ISO time or age (6h, 2d)"),
        until: z.string().optional().describe("... and before (default: now)"),
        ratePerSecond: z.number().int().min(1).optional(),
        eventTypes: z.array(z.string()).optional().describe("bulk-replay only"),
        channel: z.string().optional().describe("bulk-replay only"),
        status: z
          .array(z.enum(["delivered", "failed", "dead_letter", "canceled"]))
          .optional()
          .describe("bulk-replay only: deliveries now in these states"),
        ...confirmShape,
      },
      annotations: ACTION,
    },
    (a) =>
      answer(async () => {
        const path = `/api/v1/app/${enc(a.app)}/endpoint/${enc(a.endpoint)}/${a.kind}`;
        const body = {
          since: timeArg(a.since),
          ...(a.until !== undefined && { until: timeArg(a.until) }),
          ...(a.ratePerSecond !== undefined && { ratePerSecond: a.ratePerSecond }),
          ...(a.eventTypes !== undefined && { eventTypes: a.eventTypes }),
          ...(a.channel !== undefined && { channel: a.channel }),
          ...(a.status !== undefined && { status: a.status }),
        };
        return dryRunFirst(
          tokens,
          "replay_endpoint",
          a,
          async () => {
            const made = await server.call<BackgroundTask>("POST", path, { ...body, dryRun: true });
            const counted = await followTask(server, made.id, () => {}, DRY_RUN_POLL_MS);
            return {
              nothingToDo: counted.data.total === 0,
              plan: { wouldSend: counted.data.total, window: body, dryRunTask: counted.id },
            };
          },
          () => server.call<BackgroundTask>("POST", path, body),
        );
      }),
  );

  for (const disabled of [true, false]) {
    const tool = disabled ? "disable_endpoint" : "enable_endpoint";
    mcp.registerTool(
      tool,
      {
        title: disabled ? "Disable an endpoint" : "Enable an endpoint",
        description: disabled
          ? "Stop deliveries to an endpoint: what it has queued waits, and messages sent meanwhile are held for it (or recorded as skipped when it is set to skip). Nothing is dropped. A dry run first (its state, backlog and what disabling does), then confirm: true with the planToken."
          : "Resume deliveries to an endpoint: what it held goes out, oldest first (skipped messages need replay-missing). A dry run first (its state and backlog), then confirm: true with the planToken.",
        inputSchema: {
          app: z.string().describe("the application (id or uid)"),
          endpoint: z.string().describe("the endpoint (id or uid)"),
          ...confirmShape,
        },
        annotations: ACTION,
      },
      (a) =>
        answer(async () => {
          const path = `/api/v1/app/${enc(a.app)}/endpoint/${enc(a.endpoint)}`;
          return dryRunFirst(
            tokens,
            tool,
            a,
            async () => {
              const [e, health]: Json[] = await Promise.all([
                server.call("GET", path),
                server.call("GET", `${path}/health`),
              ]);
              return {
                nothingToDo: Boolean(e.disabled) === disabled,
                plan: {
                  endpoint: e.id,
                  url: e.url,
                  disabledNow: Boolean(e.disabled),
                  disabledAfter: disabled,
                  pending: health.queue?.pending ?? null,
                  effect: disabled
                    ? `once disabled, ${e.whileDisabled ? whileDisabledText(e.whileDisabled) : EITHER_MODE_TEXT}`
                    : "what it held goes out, oldest first",
                },
              };
            },
            () => server.call("PATCH", path, { disabled }),
          );
        }),
    );
  }
}
