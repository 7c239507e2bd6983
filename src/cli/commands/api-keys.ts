/** api-key create | list | revoke (admin keys only, as in the API). */
import { type Command, InvalidArgumentError } from "commander";
import { appNames } from "../app-names.ts";
import { enc, qs } from "../args.ts";
import { ExitCode, type OutputOptions, print, table } from "../output.ts";
import { onServer, serverCommand } from "../server-command.ts";

interface ApiKey {
  id: string;
  name: string;
  role: string;
  appId: string | null;
  createdAt: string;
  revokedAt: string | null;
  key?: string;
}

export function registerApiKeyCommands(program: Command): void {
  const apiKey = program.command("api-key").description("API keys: create, list, revoke");

  serverCommand(apiKey, "create", "a new key, shown once")
    .option("--app <app>", "an app-scoped key for this application (id or uid)")
    .option("--admin", "an admin key (sees and manages everything)")
    .option("--name <name>", "what it is for")
    .action(
      onServer(
        async (server, o: OutputOptions & { app?: string; admin?: boolean; name?: string }) => {
          if (Boolean(o.app) === Boolean(o.admin))
            throw new InvalidArgumentError("say which kind: --app <app> or --admin");
          const k = await server.call<ApiKey>("POST", "/api/v1/api-keys", {
            role: o.admin ? "admin" : "app",
            ...(o.app && { appId: o.app }),
            ...(o.name && { name: o.name }),
          });
          const apps = await appNames(server, [k.appId]);
          print(
            o,
            k,
            () =>
              `created ${k.id} (${k.role}${k.appId ? ` of ${apps.of(k.appId)}, ${k.appId}` : ""})\nkey: ${k.key}`,
          );
          return ExitCode.ok;
        },
      ),
    );

  serverCommand(apiKey, "list", "every key (never the key itself)")
    .option("--app <app>", "only the keys of this application")
    .action(
      onServer(async (server, o: OutputOptions & { app?: string }) => {
        const { data } = await server.call<{ data: ApiKey[] }>(
          "GET",
          `/api/v1/api-keys${qs({ app_id: o.app })}`,
        );
        const apps = await appNames(
          server,
          data.map((k) => k.appId),
        );
        print(o, data, () =>
          table(
            ["id", "role", "app", "name", "created", "revoked"],
            data.map((k) => [k.id, k.role, apps.of(k.appId), k.name, k.createdAt, k.revokedAt]),
          ),
        );
        return ExitCode.ok;
      }),
    );

  serverCommand(apiKey, "revoke <keyId>", "revoke a key; it fails from the next request on").action(
    onServer(async (server, keyId: string, o: OutputOptions) => {
      await server.call("DELETE", `/api/v1/api-keys/${enc(keyId)}`);
      print(o, { revoked: keyId }, () => `revoked ${keyId}`);
      return ExitCode.ok;
    }),
  );
}
