/** What a tool answers: its data as JSON text, or a failure as `{"error":{code,...}}`. */
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { errorJson } from "../cli/error-json.ts";

export const jsonResult = (data: unknown): CallToolResult => ({
  content: [{ type: "text", text: JSON.stringify(data, null, 2) }],
});

export const errorResult = (err: unknown): CallToolResult => ({
  isError: true,
  content: [{ type: "text", text: JSON.stringify(errorJson(err)) }],
});

/** Runs a tool's body: its answer as JSON, any failure as an error result with its code. */
export async function answer(fn: () => Promise<unknown>): Promise<CallToolResult> {
  try {
    return jsonResult(await fn());
  } catch (err) {
    return errorResult(err);
  }
}
