/**
 * Recovery and its background tasks (docs/recovery.md), in Svix's shapes:
 *   POST /app/{appId}/endpoint/{endpointId}/recover         { since, until? }
 *   POST /app/{appId}/endpoint/{endpointId}/replay-missing  { since, until? }
 *   POST /app/{appId}/endpoint/{endpointId}/bulk-replay     { since, until?, eventTypes?,
 *                                                             channel?, tag?, status?, statusCodeClass? }
 *     each also takes ratePerSecond? and dryRun?; answers 202 { id, status, task, ... }
 *   GET  /background-task?status=&task=&endpoint_id=&dry_run=&limit=&iterator=&order=
 *   GET  /background-task/{taskId}
 *   POST /background-task/{taskId}/cancel
 * Everything is checked before the task is made: a refused request starts nothing.
 */
import type { FastifyInstance, FastifyRequest } from "fastify";
import { ID_PREFIX } from "../../ids.ts";
import {
  cancelTask,
  createTask,
  getTask,
  listTasks,
  TASK_STATUSES,
  type TaskRow,
  type TaskStatus,
  unknownEventTypes,
} from "../../ops/background-tasks.ts";
import {
  REPLAYABLE_STATUSES,
  type ReplayableStatus,
  type ReplayFilters,
  TASK_KINDS,
  type TaskKind,
} from "../../ops/replay-scan.ts";
import { timeInput } from "../body-check.ts";
import type { ApiContext } from "../context.ts";
import { apiError, conflict, notFound } from "../errors.ts";
import { type PageQuery, pageQuerySchema, planPage, toPage } from "../pagination.ts";
import { resolveAppId, resolveEndpointId } from "../resolve.ts";
import { iso } from "../schemas.ts";
import { taskCreatedResponse, taskPageResponse, taskResponse } from "../task-responses.ts";

const str = { type: "string", minLength: 1, maxLength: 256 } as const;
/** a delivery status or Svix's MessageStatus number (the handler knows which exist) */
const oneStatus = {
  anyOf: [
    { type: "string", maxLength: 64 },
    { type: "integer", minimum: -1_000_000, maximum: 1_000_000 },
  ],
} as const;
const nullableName = { type: ["string", "null"], minLength: 1, maxLength: 256 } as const;
const endpointParams = {
  type: "object",
  properties: { appId: str, endpointId: str },
  required: ["appId", "endpointId"],
} as const;
const windowProperties = {
  since: { type: "string", maxLength: 64 },
  until: { type: ["string", "null"], maxLength: 64 },
  ratePerSecond: { type: ["integer", "null"], minimum: 1, maximum: 1_000_000 },
  dryRun: { type: ["boolean", "null"] },
} as const;

interface WindowBody {
  since: string;
  until?: string | null;
  ratePerSecond?: number | null;
  dryRun?: boolean | null;
}
interface BulkBody extends WindowBody {
  eventTypes?: string[] | null;
  channel?: string | null;
  tag?: string | null;
  status?: string | number | Array<string | number> | null;
  statusCodeClass?: number | null;
}

/** Svix's MessageStatus numbers, as the delivery statuses a replay selects (3, sending: none). */
const SVIX_STATUS: Record<number, ReplayableStatus> = {
  0: "delivered",
  1: "failed",
  2: "dead_letter",
  4: "canceled",
};

/** The statuses a bulk replay's `status` names; unknown_status for anything else. */
function statusesOf(status: BulkBody["status"]): ReplayableStatus[] {
  if (status === null || status === undefined) return [...REPLAYABLE_STATUSES];
  const asked = Array.isArray(status) ? status : [status];
  const out = new Set<ReplayableStatus>();
  for (const s of asked) {
    const named =
      typeof s === "number"
        ? SVIX_STATUS[s]
        : REPLAYABLE_STATUSES.find((r) => r === s.replaceAll("-", "_"));
    if (!named) {
      throw apiError(
        "unknown_status",
        `status ${JSON.stringify(s)} is none a replay selects: ${REPLAYABLE_STATUSES.join(", ")} (or Svix's 0, 1, 2, 4)`,
      );
    }
    out.add(named);
  }
  if (out.size === 0) throw apiError("unknown_status", "status names no status");
  return [...out];
}

/** A task as the API shows it (Svix's BackgroundTaskOut, progress in `data`). */
export function taskOut(t: TaskRow) {
  const done = Number(t.done);
  return {
    id: t.id,
    status: t.status,
    task: t.kind,
    data: {
      appId: t.app_id,
      endpointId: t.endpoint_id,
      since: iso(t.since)!,
      until: iso(t.until)!,
      filters: {
        eventTypes: t.params.eventTypes ?? null,
        channel: t.params.channel ?? null,
        tag: t.params.tag ?? null,
        status: t.params.statuses ?? null,
        statusCodeClass: t.params.statusCodeClass ?? null,
      },
      dryRun: t.dry_run,
      ratePerSecond: Number(t.rate_per_second),
      total: t.total === null ? null : Number(t.total),
      done,
      // Svix's recover reports this
      messagesSent: done,
      error: t.error,
    },
    createdAt: iso(t.created_at)!,
    updatedAt: iso(t.updated_at)!,
    finishedAt: iso(t.finished_at),
  };
}

export function registerBackgroundTaskRoutes(app: FastifyInstance, { pool, config }: ApiContext) {
  const scopeOf = (request: FastifyRequest) =>
    request.principal.role === "app" ? request.principal.appId : null;

  /** Checks a request for a task of `kind` and makes it (202), or refuses it whole. */
  async function startTask(
    request: FastifyRequest<{ Params: { appId: string; endpointId: string } }>,
    kind: TaskKind,
    body: BulkBody,
  ) {
    const appId = await resolveAppId(pool, request.principal, request.params.appId);
    const endpointId = await resolveEndpointId(pool, appId, request.params.endpointId);
    const now = Date.now();
    const since = timeInput(body.since, "since")!;
    const until = timeInput(body.until, "until") ?? new Date(now);
    if (since.getTime() > now)
      throw apiError("since_in_future", `since (${since.toISOString()}) is in the future`);
    if (until.getTime() <= since.getTime())
      throw apiError("until_before_since", "until must be after since");
    const oldest = now - config.retention.payloadMs;
    if (since.getTime() < oldest) {
      throw apiError(
        "window_beyond_retention",
        `since is older than the payload retention (${new Date(oldest).toISOString()}): those messages are gone`,
      );
    }
    const filters: ReplayFilters = {};
    if (kind === "endpoint.bulk-replay") {
      filters.statuses = statusesOf(body.status);
      if (body.eventTypes?.length) {
        const unknown = await unknownEventTypes(pool, appId, body.eventTypes, { since, until });
        if (unknown.length > 0) {
          throw apiError(
            "unknown_event_type",
            `no such event type: ${unknown.join(", ")} (not in the catalogue, and no message of the window has it)`,
          );
        }
        filters.eventTypes = body.eventTypes;
      }
      if (body.channel) filters.channel = body.channel;
      if (body.tag) filters.tag = body.tag;
      if (body.statusCodeClass !== null && body.statusCodeClass !== undefined)
        filters.statusCodeClass = body.statusCodeClass;
    }
    const made = await createTask(pool, {
      kind,
      appId,
      endpointId,
      since,
      until,
      filters,
      dryRun: body.dryRun ?? false,
      ratePerSecond: body.ratePerSecond ?? null,
      defaultRate: config.worker.replayRatePerSecond,
      createdBy: request.principal.keyId,
    });
    if (!made.ok) {
      throw apiError(
        "replay_in_progress",
        `a replay of this endpoint over an overlapping window is running (${made.overlapping}); wait for it or cancel it`,
      );
    }
    const { id, status, task, createdAt, updatedAt } = taskOut(made.task);
    return { id, status, task, createdAt, updatedAt };
  }

  const windowRoute = (kind: TaskKind, path: string) =>
    app.post<{ Params: { appId: string; endpointId: string }; Body: WindowBody }>(
      `/app/:appId/endpoint/:endpointId/${path}`,
      {
        schema: {
          tags: ["endpoint"],
          params: endpointParams,
          body: {
            type: "object",
            additionalProperties: false,
            required: ["since"],
            properties: windowProperties,
          },
          response: { 202: taskCreatedResponse },
        },
      },
      async (request, reply) => reply.code(202).send(await startTask(request, kind, request.body)),
    );
  windowRoute("endpoint.recover", "recover");
  windowRoute("endpoint.replay", "replay-missing");

  app.post<{ Params: { appId: string; endpointId: string }; Body: BulkBody }>(
    "/app/:appId/endpoint/:endpointId/bulk-replay",
    {
      schema: {
        tags: ["endpoint"],
        params: endpointParams,
        body: {
          type: "object",
          additionalProperties: false,
          required: ["since"],
          properties: {
            ...windowProperties,
            eventTypes: {
              type: ["array", "null"],
              items: { type: "string", minLength: 1, maxLength: 256 },
              maxItems: 64,
            },
            channel: nullableName,
            tag: nullableName,
            // a delivery status, Svix's MessageStatus number, or a list of them (checked
            // by the handler: unknown_status)
            status: {
              anyOf: [
                { type: "null" },
                oneStatus,
                { type: "array", maxItems: 8, items: { anyOf: [oneStatus] } },
              ],
            },
            statusCodeClass: {
              type: ["integer", "null"],
              enum: [0, 100, 200, 300, 400, 500, null],
            },
          },
        },
        response: { 202: taskCreatedResponse },
      },
    },
    async (request, reply) =>
      reply.code(202).send(await startTask(request, "endpoint.bulk-replay", request.body)),
  );

  app.get<{
    Querystring: PageQuery & {
      status?: TaskStatus;
      task?: TaskKind;
      endpoint_id?: string;
      dry_run?: boolean;
    };
  }>(
    "/background-task",
    {
      schema: {
        tags: ["background-task"],
        querystring: {
          type: "object",
          properties: {
            ...pageQuerySchema,
            status: { type: "string", enum: [...TASK_STATUSES] },
            task: { type: "string", enum: [...TASK_KINDS] },
            // hookrelay's own: one endpoint's tasks (its id), real replays or dry runs only
            endpoint_id: { type: "string", minLength: 1, maxLength: 256 },
            dry_run: { type: "boolean" },
          },
        },
        response: { 200: taskPageResponse },
      },
    },
    async (request) => {
      const q = request.query;
      const plan = planPage(q, "descending", ID_PREFIX.backgroundTask);
      const rows = await listTasks(
        pool,
        {
          appId: scopeOf(request),
          status: q.status ?? null,
          kind: q.task ?? null,
          endpointId: q.endpoint_id ?? null,
          dryRun: q.dry_run ?? null,
        },
        plan.window,
      );
      return toPage(rows, plan, (r) => r.id, taskOut);
    },
  );

  const taskParams = {
    type: "object",
    properties: { taskId: str },
    required: ["taskId"],
  } as const;

  app.get<{ Params: { taskId: string } }>(
    "/background-task/:taskId",
    {
      schema: {
        tags: ["background-task"],
        params: taskParams,
        response: { 200: taskResponse },
      },
    },
    async (request) => {
      const task = await getTask(pool, request.params.taskId, scopeOf(request));
      if (!task) throw notFound("background task");
      return taskOut(task);
    },
  );

  app.post<{ Params: { taskId: string } }>(
    "/background-task/:taskId/cancel",
    {
      schema: {
        tags: ["background-task"],
        params: taskParams,
        response: { 200: taskResponse },
      },
    },
    async (request) => {
      const task = await cancelTask(pool, request.params.taskId, scopeOf(request));
      if (!task) throw notFound("background task");
      if (task.status !== "canceled")
        throw conflict(`the task is ${task.status}; only a running task can be canceled`);
      return taskOut(task);
    },
  );
}
