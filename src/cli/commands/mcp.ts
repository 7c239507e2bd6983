/**
 * mcp: the MCP server over stdio (src/mcp, docs/mcp.md). Its modules and the SDK load only
 * when it runs (a dynamic import), like the server roles: other commands stay fast.
 */
import type { Command } from "commander";
import type { ConnectionFlags } from "../connection.ts";

export function registerMcpCommand(program: Command, version: string): void {
  program
    .command("mcp")
    .description(
      "an MCP server on stdio for AI assistants: read tools for any key, actions (dry run first) for an admin key",
    )
    .option("--url <url>", "the hookrelay API (HOOKRELAY_URL; default: npm start in this folder)")
    .option("--key <key>", "API key (HOOKRELAY_KEY; default: the local server's CLI key)")
    .action(async (flags: ConnectionFlags) => {
      const { serveMcpOnStdio } = await import("../../mcp/stdio.ts");
      await serveMcpOnStdio(flags, version);
    });
}
