/**
 * endpoint headers <app> <endpoint>: the endpoint's custom headers as the API shows them
 * (GET .../endpoint/{ep}/headers): the values of sensitive ones masked as "***"
 * (security/sensitive-headers.ts). Set them with `endpoint add|update --header`, or the
 * API's PUT/PATCH .../headers.
 */
import type { Command } from "commander";
import { enc } from "../args.ts";
import { ExitCode, type OutputOptions, print, table } from "../output.ts";
import { onServer, serverCommand } from "../server-command.ts";

interface HeadersOut {
  headers: Record<string, string>;
  sensitive: string[];
}

/** The lines `endpoint headers` prints for people. */
export function headersText(h: HeadersOut): string {
  const rows = Object.entries(h.headers).map(([name, value]) => [
    name,
    value,
    h.sensitive.includes(name) ? "sensitive (masked)" : "",
  ]);
  return rows.length === 0 ? "no custom headers" : table(["header", "value", ""], rows);
}

/** Adds `headers` under the `endpoint` command (registered by endpoints.ts). */
export function registerEndpointHeadersCommand(program: Command): void {
  const endpoint = program.commands.find((c) => c.name() === "endpoint");
  if (!endpoint) throw new Error("the endpoint command must be registered first");
  serverCommand(
    endpoint,
    "headers <app> <endpoint>",
    "the custom headers sent with every delivery (sensitive values masked)",
  ).action(
    onServer(async (server, appId: string, ep: string, o: OutputOptions) => {
      const h = await server.call<HeadersOut>(
        "GET",
        `/api/v1/app/${enc(appId)}/endpoint/${enc(ep)}/headers`,
      );
      print(o, h, () => headersText(h));
      return ExitCode.ok;
    }),
  );
}
