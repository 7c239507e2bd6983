/**
 * Background tasks as the CLI reads them (GET /api/v1/background-task/{id}, docs/recovery.md):
 * their shape, a one-line progress, and following one until it ends (`--wait`).
 */
import { enc } from "./args.ts";
import type { ServerConnection } from "./connection.ts";
import { ExitCode } from "./output.ts";

export interface BackgroundTask {
  id: string;
  status: "running" | "finished" | "failed" | "canceled";
  task: string;
  data: {
    appId: string;
    endpointId: string;
    since: string;
    until: string;
    dryRun: boolean;
    ratePerSecond: number;
    /** null until the task has counted its window */
    total: number | null;
    done: number;
    error: string | null;
    filters: Record<string, unknown>;
  };
  createdAt: string;
  updatedAt: string;
  finishedAt: string | null;
}

/** How often `--wait` asks for progress (ms). */
export const TASK_POLL_MS = 1_000;

export const getTask = (server: ServerConnection, id: string) =>
  server.call<BackgroundTask>("GET", `/api/v1/background-task/${enc(id)}`);

/** "120/1000 sent" (or "counting" before the total is known). */
export function progressText(t: BackgroundTask): string {
  const { done, total } = t.data;
  return total === null ? `${done} sent, counting` : `${done}/${total} sent`;
}

/** The task in one line: id, kind, status, progress, and the error of a failed one. */
export function taskLine(t: BackgroundTask): string {
  const how = t.data.dryRun ? `dry run: ${t.data.total ?? "?"} would be sent` : progressText(t);
  return `${t.id} ${t.task} ${t.status}: ${how}${t.data.error ? ` (${t.data.error})` : ""}`;
}

/** finished: 0; failed or canceled: 1 (what the operator asked for did not happen). */
export const exitCodeOf = (t: BackgroundTask) =>
  t.status === "finished" ? ExitCode.ok : ExitCode.error;

/**
 * Reads the task every `pollMs` until it is no longer running; `onProgress` sees each
 * running state. Stopping the CLI stops the following, never the task (`tasks cancel`).
 */
export async function followTask(
  server: ServerConnection,
  id: string,
  onProgress: (t: BackgroundTask) => void,
  pollMs = TASK_POLL_MS,
): Promise<BackgroundTask> {
  for (;;) {
    const t = await getTask(server, id);
    if (t.status !== "running") return t;
    onProgress(t);
    await new Promise((r) => setTimeout(r, pollMs));
  }
}
