/** tasks list | get | cancel: the server's background tasks (replays), docs/recovery.md. */
import type { Command } from "commander";
import { type AppNames, appNames } from "../app-names.ts";
import { enc, limitArg, qs } from "../args.ts";
import { cliIo } from "../io.ts";
import { ExitCode, type OutputOptions, print, table } from "../output.ts";
import { onServer, serverCommand } from "../server-command.ts";
import {
  type BackgroundTask,
  exitCodeOf,
  followTask,
  getTask,
  progressText,
  taskLine,
} from "../task-follow.ts";

/** Every field of a task, one per line. */
function details(t: BackgroundTask, apps: AppNames): string {
  const f = t.data.filters;
  const filters = Object.entries(f)
    .filter(([, v]) => v !== null && v !== undefined)
    .map(([k, v]) => `${k}=${Array.isArray(v) ? v.join(",") : String(v)}`);
  return table(
    ["field", "value"],
    [
      ["id", t.id],
      ["task", t.task],
      ["status", t.status],
      ["endpoint", `${t.data.endpointId} (app ${apps.of(t.data.appId)})`],
      ["window", `${t.data.since} .. ${t.data.until}`],
      ["filters", filters.length ? filters.join(" ") : "none"],
      ["dry run", t.data.dryRun ? "yes: counted, nothing sent" : "no"],
      ["rate", `${t.data.ratePerSecond}/s`],
      ["progress", progressText(t)],
      ["error", t.data.error],
      ["created", t.createdAt],
      ["updated", t.updatedAt],
      ["finished", t.finishedAt],
    ],
  );
}

export function registerTaskCommands(program: Command): void {
  const tasks = program
    .command("tasks")
    .description(
      "background tasks (endpoint recover, replay-missing, bulk-replay): list, get, cancel",
    );

  serverCommand(tasks, "list", "background tasks, newest first")
    .option("--status <status>", "running, finished, failed or canceled")
    .option(
      "--task <kind>",
      "endpoint.recover, endpoint.replay (replay-missing) or endpoint.bulk-replay",
    )
    .option("--limit <n>", "at most this many (1..250)", limitArg, 50)
    .action(
      onServer(
        async (server, o: OutputOptions & { status?: string; task?: string; limit: number }) => {
          const page = await server.call<{ data: BackgroundTask[] }>(
            "GET",
            `/api/v1/background-task${qs({
              status: o.status,
              task: o.task,
              limit: o.limit,
            })}`,
          );
          print(o, page.data, () =>
            page.data.length === 0
              ? "no background tasks"
              : table(
                  ["id", "task", "status", "progress", "endpoint", "dry run", "created"],
                  page.data.map((t) => [
                    t.id,
                    t.task,
                    t.status,
                    progressText(t),
                    t.data.endpointId,
                    t.data.dryRun ? "yes" : "no",
                    t.createdAt,
                  ]),
                ),
          );
          return ExitCode.ok;
        },
      ),
    );

  serverCommand(tasks, "get <task-id>", "one task: its window, filters, pace and progress")
    .option("--wait", "follow its progress until it ends (exit 1 if it fails or is canceled)")
    .action(
      onServer(async (server, id: string, o: OutputOptions & { wait?: boolean }) => {
        if (!o.wait) {
          const t = await getTask(server, id);
          const apps = await appNames(server, [t.data.appId]);
          print(o, t, () => details(t, apps));
          return ExitCode.ok;
        }
        const end = await followTask(server, id, (t) => {
          if (!o.json) cliIo().stderr.write(`${taskLine(t)}\n`);
        });
        const apps = await appNames(server, [end.data.appId]);
        print(o, end, () => details(end, apps));
        return exitCodeOf(end);
      }),
    );

  serverCommand(
    tasks,
    "cancel <task-id>",
    "stop a running task between two batches; what it sent stays sent",
  ).action(
    onServer(async (server, id: string, o: OutputOptions) => {
      const t = await server.call<BackgroundTask>(
        "POST",
        `/api/v1/background-task/${enc(id)}/cancel`,
      );
      print(o, t, () => taskLine(t));
      return ExitCode.ok;
    }),
  );
}
