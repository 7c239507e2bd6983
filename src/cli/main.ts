#!/usr/bin/env node
/**
 * The `hookrelay` command. `start` runs API + worker in one process (embedded PostgreSQL
 * unless DATABASE_URL is set); `api`, `worker` and `migrate` run one role each. The
 * operator commands talk to a running server over HTTP (connection.ts, docs/cli.md).
 */
import { InvalidArgumentError } from "commander";
import { ApiError, HookRelayError } from "../errors.ts";
import { ExitCode } from "./output.ts";
import { buildProgram } from "./program.ts";

buildProgram()
  .parseAsync()
  .catch((err: unknown) => {
    const message =
      err instanceof ApiError
        ? `${err.message} (${err.code})`
        : err instanceof HookRelayError
          ? `${err.code}: ${err.message}`
          : err instanceof Error
            ? err.message
            : String(err);
    process.stderr.write(`hookrelay: ${message}\n`);
    if (err instanceof HookRelayError && err.cause && !(err instanceof ApiError))
      process.stderr.write(`  cause: ${String(err.cause)}\n`);
    process.exit(err instanceof InvalidArgumentError ? 2 : ExitCode.error);
  });
