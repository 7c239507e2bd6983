/**
 * Response schemas of the background-task routes (routes/background-tasks.ts), in the
 * style of response-schemas.ts: Svix's BackgroundTaskOut (`id`, `status`, `task`, `data`,
 * `updatedAt`) with hookrelay's progress in `data` (docs/recovery.md).
 */
import { count, nameList, nullableCount, nullableText, pageOf, text } from "./response-parts.ts";
import type { FromSchema } from "./schema-type.ts";

/** What POST .../recover, .../replay-missing and .../bulk-replay answer (202). */
export const taskCreatedResponse = {
  type: "object",
  properties: {
    id: text,
    status: text,
    task: text,
    createdAt: text,
    updatedAt: text,
  },
  required: ["id", "status", "task", "createdAt", "updatedAt"],
} as const;

/** A task's window, filters and progress. */
const taskData = {
  type: "object",
  properties: {
    appId: text,
    endpointId: text,
    since: text,
    until: text,
    filters: {
      type: "object",
      properties: {
        eventTypes: nameList,
        channel: nullableText,
        tag: nullableText,
        status: nameList,
        statusCodeClass: nullableCount,
      },
      required: ["eventTypes", "channel", "tag", "status", "statusCodeClass"],
    },
    dryRun: { type: "boolean" },
    ratePerSecond: { type: "number" },
    total: nullableCount,
    done: count,
    messagesSent: count,
    error: nullableText,
  },
  required: [
    "appId",
    "endpointId",
    "since",
    "until",
    "filters",
    "dryRun",
    "ratePerSecond",
    "total",
    "done",
    "messagesSent",
    "error",
  ],
} as const;

/** GET /background-task/{id} and POST /background-task/{id}/cancel. */
export const taskResponse = {
  type: "object",
  properties: {
    id: text,
    status: text,
    task: text,
    data: taskData,
    createdAt: text,
    updatedAt: text,
    finishedAt: nullableText,
  },
  required: ["id", "status", "task", "data", "createdAt", "updatedAt", "finishedAt"],
} as const;

/** GET /background-task: a page of tasks, newest first. */
export const taskPageResponse = pageOf(taskResponse);

export type TaskResponse = FromSchema<typeof taskResponse>;
