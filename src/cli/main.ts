#!/usr/bin/env node
/**
 * The `hookrelay` command. `start` runs API + worker in one process (embedded PostgreSQL
 * unless DATABASE_URL is set); `api`, `worker` and `migrate` run one role each. The
 * operator commands talk to a running server over HTTP (connection.ts, docs/cli.md).
 */
import { runCommand } from "./run.ts";

const { code, stopped } = await runCommand(process.argv.slice(2));
// A failed or stopped command exits now; one that finished lets the process end by itself
// (a serving command keeps it running).
if (stopped) process.exit(code);
process.exitCode = code;
