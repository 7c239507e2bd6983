/**
 * `hookrelay mcp` over stdio: stdout carries the protocol, so nothing else is written
 * there; the server runs until the client closes stdin.
 */
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { type ConnectionFlags, connect } from "../cli/connection.ts";
import { isAdminKey, makeHookrelayMcp } from "./server.ts";

/** Connects to the API, checks the key, and serves on this process's stdin and stdout. */
export async function serveMcpOnStdio(flags: ConnectionFlags, version: string): Promise<void> {
  const server = await connect(flags);
  const admin = await isAdminKey(server);
  const mcp = makeHookrelayMcp(server, { admin, version });
  const transport = new StdioServerTransport();
  process.stdin.once("end", () => void mcp.close());
  await mcp.connect(transport);
  process.stderr.write(
    `hookrelay mcp: serving ${server.url} on stdio (${admin ? "admin key: reads and actions" : "app key: reads only"})\n`,
  );
}
