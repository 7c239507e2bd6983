/**
 * A failure as JSON: `{"error":{"code","message","status"?}}`, the code one of
 * src/errors.ts's registry (a usage error of the command line is invalid_config, anything
 * without a code internal_error) and `status` the API's answer when the server refused.
 * `--json` prints it (run.ts); the MCP server's tools answer it (src/mcp).
 */
import { CommanderError } from "commander";
import { ApiError, type ErrorCode, HookRelayError } from "../errors.ts";

export interface ErrorJson {
  error: { code: ErrorCode; message: string; status?: number };
}

export function errorJson(err: unknown): ErrorJson {
  const code: ErrorCode =
    err instanceof HookRelayError
      ? err.code
      : err instanceof CommanderError
        ? "invalid_config"
        : "internal_error";
  const message =
    err instanceof CommanderError
      ? err.message.replace(/^error: /, "")
      : err instanceof Error
        ? err.message
        : String(err);
  return { error: { code, message, ...(err instanceof ApiError && { status: err.status }) } };
}
