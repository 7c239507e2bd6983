/** app create | list | delete */
import { type Command, InvalidArgumentError } from "commander";
import { enc } from "../args.ts";
import { ExitCode, type OutputOptions, print, table } from "../output.ts";
import { onServer, serverCommand } from "../server-command.ts";

// biome-ignore lint/suspicious/noExplicitAny: API responses are rendered field by field
type Json = any;

export function registerApplicationCommands(program: Command): void {
  const app = program.command("app").description("applications: create, list, delete");

  serverCommand(app, "create <name>", "create an application")
    .option("--uid <uid>", "your own identifier for it")
    .option(
      "--egress-pool <name>",
      "the egress pool its endpoints leave through unless they name their own (hookrelay egress lists them)",
    )
    .action(
      onServer(
        async (server, name: string, o: OutputOptions & { uid?: string; egressPool?: string }) => {
          const a: Json = await server.call("POST", "/api/v1/app", {
            name,
            ...(o.uid && { uid: o.uid }),
            ...(o.egressPool && { egressPool: o.egressPool }),
          });
          print(o, a, () => `created ${a.id}${a.uid ? ` (uid ${a.uid})` : ""}`);
          return ExitCode.ok;
        },
      ),
    );

  serverCommand(app, "list", "every application").action(
    onServer(async (server, o: OutputOptions) => {
      const page: Json = await server.call("GET", "/api/v1/app?limit=250");
      print(o, page.data, () =>
        table(
          ["id", "uid", "name", "created"],
          page.data.map((a: Json) => [a.id, a.uid, a.name, a.createdAt]),
        ),
      );
      return ExitCode.ok;
    }),
  );

  serverCommand(
    app,
    "delete <app>",
    "delete an application with its endpoints, messages and their history",
  )
    .option("--yes", "confirm: this cannot be undone")
    .action(
      onServer(async (server, appId: string, o: OutputOptions & { yes?: boolean }) => {
        if (!o.yes) {
          throw new InvalidArgumentError(
            `deleting ${appId} removes its endpoints, messages and history for good; add --yes to confirm`,
          );
        }
        await server.call("DELETE", `/api/v1/app/${enc(appId)}`);
        print(o, { deleted: appId }, () => `deleted ${appId}`);
        return ExitCode.ok;
      }),
    );
}
