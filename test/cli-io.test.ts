/**
 * src/cli/io.ts: a command run with IO of its own is isolated through AsyncLocalStorage; the
 * process's own run (main.ts: every serving command) is not, so it leaves Node's async hooks
 * off (they would call into JS for every promise the worker makes).
 */
import { execFile } from "node:child_process";
import path from "node:path";
import { promisify } from "node:util";
import { expect, test } from "vitest";
import { type CliIo, cliIo, processIo, setExitCode, withCliRun } from "../src/cli/io.ts";

const ROOT = path.resolve(import.meta.dirname, "..");

test("the process's own run leaves async hooks off: after an await no async id is tracked", async () => {
  // In a fresh process (vitest's own may have hooks on): the compiled io.js, as main.ts runs it.
  const script = `
    import { executionAsyncId } from "node:async_hooks";
    const io = await import(${JSON.stringify(path.join(ROOT, "dist/cli/io.js"))});
    const run = { io: io.processIo, exitCode: undefined };
    await io.withCliRun(run, async () => {
      await new Promise((resolve) => setTimeout(resolve, 1));
      io.setExitCode(3);
      console.log(JSON.stringify({ asyncId: executionAsyncId(), io: io.cliIo() === io.processIo }));
    });
    console.log(JSON.stringify({ exitCode: run.exitCode, processExitCode: process.exitCode ?? null }));
  `;
  const { stdout } = await promisify(execFile)(
    process.execPath,
    ["--input-type=module", "-e", script],
    { timeout: 30_000 },
  );
  const [inside, after] = stdout
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line));
  // (with async hooks on, the continuation runs under the promise's own async id)
  expect(inside).toEqual({ asyncId: 0, io: true });
  // the exit code is the run's, as runCommand reads it; the process's is main.ts's to set
  expect(after).toEqual({ exitCode: 3, processExitCode: null });
});

test("runs with IO of their own stay apart, each with its exit code", async () => {
  const ioOf = (name: string): CliIo => ({
    stdout: { write: () => name },
    stderr: { write: () => name },
    stdin: processIo.stdin,
    env: { NAME: name },
  });
  const a = { io: ioOf("a"), exitCode: undefined as number | undefined };
  const b = { io: ioOf("b"), exitCode: undefined as number | undefined };
  const seen: string[] = [];
  await Promise.all([
    withCliRun(a, async () => {
      await new Promise((resolve) => setTimeout(resolve, 5));
      seen.push(`a:${cliIo().env.NAME}`);
      setExitCode(4);
    }),
    withCliRun(b, async () => {
      seen.push(`b:${cliIo().env.NAME}`);
      await new Promise((resolve) => setTimeout(resolve, 10));
      setExitCode(5);
    }),
  ]);
  expect(seen.sort()).toEqual(["a:a", "b:b"]);
  expect([a.exitCode, b.exitCode]).toEqual([4, 5]);
  expect(cliIo()).toBe(processIo);
});
