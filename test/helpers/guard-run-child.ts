/**
 * A run for test/guard-run.test.ts: it starts a child process (a `sleep`), guards itself
 * with guardRun, prints the child's PID, then fails the way argv[2] says, with nothing
 * catching it.
 */
import { spawn } from "node:child_process";
import { EventEmitter } from "node:events";
import { guardRun } from "../../faults/lib/guard-run.ts";

const child = spawn("sleep", ["60"], { stdio: "ignore" });
guardRun({
  watchdogSeconds: Number(process.argv[3] ?? 60),
  log: (line) => process.stderr.write(`${line}\n`),
  cleanup: async () => {
    if (child.pid !== undefined) process.kill(child.pid, "SIGTERM");
    process.stdout.write("cleaned up\n");
  },
});
process.stdout.write(`child ${child.pid}\n`);

setTimeout(() => {
  if (process.argv[2] === "event") new EventEmitter().emit("error", new Error("lost"));
  if (process.argv[2] === "rejection") void Promise.reject(new Error("nobody awaited"));
}, 50);
