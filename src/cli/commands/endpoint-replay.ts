/**
 * endpoint recover | replay-missing | bulk-replay: an endpoint's messages of a window sent
 * again, as a background task of the server (docs/recovery.md). Each prints the task; with
 * --dry-run the count of what it would send, with --wait its progress until it ends.
 */
import { type Command, InvalidArgumentError } from "commander";
import { enc, list, timeArg } from "../args.ts";
import { cliIo } from "../io.ts";
import { ExitCode, type OutputOptions, print } from "../output.ts";
import { onServer, serverCommand } from "../server-command.ts";
import { type BackgroundTask, exitCodeOf, followTask, taskLine } from "../task-follow.ts";

interface ReplayOptions extends OutputOptions {
  since: string;
  until?: string;
  rate?: number;
  dryRun?: boolean;
  wait?: boolean;
  eventType?: string[];
  channel?: string;
  tag?: string;
  status?: string[];
}

/** A whole number of sends per second, at least 1 (the API's bound). */
const rateArg = (v: string): number => {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError("expected a whole number ≥ 1");
  return n;
};
/** Comma-separated and repeatable: `--status failed,dead_letter --status canceled`. */
const names = (v: string, previous: string[] = []) => [...previous, ...list(v)];

const REPLAYS = [
  {
    verb: "recover",
    path: "recover",
    help: "send again the failed and dead-lettered deliveries of the messages of a window (a background task)",
  },
  {
    verb: "replay-missing",
    path: "replay-missing",
    help: "send the messages of a window the endpoint never got: skipped while it was disabled, canceled, or sent before it existed but matching its filters (a background task)",
  },
  {
    verb: "bulk-replay",
    path: "bulk-replay",
    help: "send again the endpoint's messages of a window that match the filters, whatever became of them (a background task)",
  },
] as const;

function withReplayOptions(c: Command): Command {
  return c
    .requiredOption(
      "--since <time>",
      "messages created since this ISO time or age (30m, 2h, 7d)",
      timeArg,
    )
    .option("--until <time>", "... and before this ISO time or age (default: now)", timeArg)
    .option(
      "--rate <per-second>",
      "sends per second (default: the endpoint's rate limit, else the server's replay rate)",
      rateArg,
    )
    .option("--dry-run", "count what it would send; send nothing")
    .option("--wait", "follow its progress until it ends (exit 1 if it fails or is canceled)");
}

function bodyOf(o: ReplayOptions): Record<string, unknown> {
  return {
    since: o.since,
    ...(o.until !== undefined && { until: o.until }),
    ...(o.rate !== undefined && { ratePerSecond: o.rate }),
    ...(o.dryRun && { dryRun: true }),
    ...(o.eventType !== undefined && { eventTypes: o.eventType }),
    ...(o.channel !== undefined && { channel: o.channel }),
    ...(o.tag !== undefined && { tag: o.tag }),
    ...(o.status !== undefined && { status: o.status }),
  };
}

/** The `endpoint` command registered by endpoints.ts, which these join. */
function endpointCommand(program: Command): Command {
  const endpoint = program.commands.find((c) => c.name() === "endpoint");
  if (!endpoint) throw new Error("register the endpoint commands before the replay commands");
  return endpoint;
}

export function registerEndpointReplayCommands(program: Command): void {
  const endpoint = endpointCommand(program);
  for (const { verb, path, help } of REPLAYS) {
    const c = withReplayOptions(serverCommand(endpoint, `${verb} <app> <endpoint>`, help));
    if (verb === "bulk-replay") {
      c.option(
        "--event-type <types>",
        "only these event types (comma-separated, repeatable)",
        names,
      )
        .option("--channel <channel>", "only messages of this channel")
        .option("--tag <tag>", "only messages with this tag")
        .option(
          "--status <statuses>",
          "only deliveries now in these states: delivered, failed, dead_letter, canceled (default: all)",
          names,
        );
    }
    c.action(
      onServer(async (server, appId: string, ep: string, o: ReplayOptions) => {
        const made = await server.call<Pick<BackgroundTask, "id" | "status" | "task">>(
          "POST",
          `/api/v1/app/${enc(appId)}/endpoint/${enc(ep)}/${path}`,
          bodyOf(o),
        );
        if (!o.dryRun && !o.wait) {
          print(
            o,
            made,
            () =>
              `started ${made.id} (${made.task}); \`hookrelay tasks get ${made.id}\` shows its progress`,
          );
          return ExitCode.ok;
        }
        // a dry run is counted when it is made; --wait follows a real one to its end
        const end = await followTask(server, made.id, (t) => {
          if (!o.json) cliIo().stderr.write(`${taskLine(t)}\n`);
        });
        print(o, end, () => taskLine(end));
        return exitCodeOf(end);
      }),
    );
  }
}
