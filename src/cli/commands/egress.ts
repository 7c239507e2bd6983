/** egress: the server's egress pools and the public IPs receivers see (docs/egress.md) */
import type { Command } from "commander";
import { ExitCode, type OutputOptions, print, table } from "../output.ts";
import { onServer, serverCommand } from "../server-command.ts";

// biome-ignore lint/suspicious/noExplicitAny: API responses are rendered field by field
type Json = any;

export function registerEgressCommand(program: Command): void {
  serverCommand(
    program,
    "egress",
    "the egress pools endpoints and applications may select (--egress-pool), with the public IPs receivers see",
  ).action(
    onServer(async (server, o: OutputOptions) => {
      const answer: Json = await server.call("GET", "/api/v1/egress");
      print(o, answer, () =>
        answer.data.length === 0
          ? `no egress pools (HOOKRELAY_EGRESS_POOLS); deliveries leave ${answer.defaultRoute === "proxy" ? "through HOOKRELAY_EGRESS_PROXY" : "from the workers' own addresses"}`
          : table(
              ["pool", "public IPs", "description"],
              answer.data.map((p: Json) => [p.name, p.publicIps.join(" "), p.description]),
            ),
      );
      return ExitCode.ok;
    }),
  );
}
