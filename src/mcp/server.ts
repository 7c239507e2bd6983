/**
 * `hookrelay mcp`: a Model Context Protocol server (the official SDK) that talks to a
 * hookrelay API with the CLI's connection settings (cli/connection.ts). Read tools for any
 * key; the action tools only when the key is an admin key (docs/mcp.md).
 */
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { ServerConnection } from "../cli/connection.ts";
import { ApiError } from "../errors.ts";
import { registerActionTools } from "./action-tools.ts";
import { makePlanTokens, type PlanTokens } from "./plan-tokens.ts";
import { registerReadTools } from "./read-tools.ts";

export interface HookrelayMcpOptions {
  /** the key is an admin key: the action tools are listed */
  admin: boolean;
  version: string;
  /** the dry runs' plan tokens (default: fresh ones, 10 minutes each) */
  tokens?: PlanTokens;
}

/** The MCP server with its tools; connect it to a transport to serve. */
export function makeHookrelayMcp(
  server: ServerConnection,
  options: HookrelayMcpOptions,
): McpServer {
  const mcp = new McpServer(
    { name: "hookrelay", version: options.version },
    {
      instructions: options.admin
        ? "hookrelay's webhook delivery: read tools for health, endpoints, dead letters, messages and attempts; actions (requeue_dead_letters, replay_endpoint, disable_endpoint, enable_endpoint) run as a dry run first and act only when called again with confirm: true and the planToken."
        : "hookrelay's webhook delivery: read tools for health, endpoints, dead letters, messages and attempts. This key is not an admin key, so no actions are offered.",
    },
  );
  registerReadTools(mcp, server);
  if (options.admin) registerActionTools(mcp, server, options.tokens ?? makePlanTokens());
  return mcp;
}

/**
 * Whether the key is an admin key: the API answers its admin-only key list to it and 403
 * to an app key. Any other failure (401, unreachable) is thrown: the server cannot start.
 */
export async function isAdminKey(server: ServerConnection): Promise<boolean> {
  try {
    await server.call("GET", "/api/v1/api-keys");
    return true;
  } catch (err) {
    if (err instanceof ApiError && err.status === 403) return false;
    throw err;
  }
}
