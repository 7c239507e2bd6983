/** send: one message into the queue, as a producer would. */
import type { Command } from "commander";
import { enc, readJson } from "../args.ts";
import { ExitCode, type OutputOptions, print } from "../output.ts";
import { onServer, serverCommand } from "../server-command.ts";

export function registerMessageCommands(program: Command): void {
  serverCommand(
    program,
    "send <app> <eventType> [file]",
    "send a message; the JSON payload comes from the file, or stdin with - or no file",
  )
    .option("--event-id <id>", "your idempotency id for it")
    .option(
      "--ordering-key <key>",
      "deliver it after every earlier message with this key, per endpoint",
    )
    .action(
      onServer(
        async (
          server,
          appId: string,
          eventType: string,
          file: string | undefined,
          o: OutputOptions & { eventId?: string; orderingKey?: string },
        ) => {
          const payload = await readJson(file);
          const m = await server.call<{ id: string }>("POST", `/api/v1/app/${enc(appId)}/msg`, {
            eventType,
            payload,
            ...(o.eventId && { eventId: o.eventId }),
            ...(o.orderingKey && { orderingKey: o.orderingKey }),
          });
          print(o, m, () => `accepted ${m.id}`);
          return ExitCode.ok;
        },
      ),
    );
}
