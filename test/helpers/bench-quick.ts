/**
 * The bench's smoke mode (`npx hookrelay bench --quick`, the same as `npm run bench --
 * --quick`) runs in the test suite only to prove the harness works end to end: it must
 * exit 0 and print a table row of every scenario it ran. No figure is asserted (timings on
 * a shared machine are not test material). The scenarios are split over two test files
 * (`--only`), which vitest's two workers run side by side: as one run it took about 170 s
 * on a quiet machine, the suite's longest file (docs/performance.md).
 */
import { expect } from "vitest";
import { runScript } from "./run-script.ts";

/** Through the CLI, as `npx hookrelay bench` runs it (it starts bin/bench.js). */
export async function expectQuickBench(only: number[], rows: string[]): Promise<void> {
  const { code, stdout, stderr } = await runScript("dist/cli/main.js", [
    "bench",
    "--quick",
    "--no-write",
    "--only",
    only.join(","),
  ]);
  expect(code, `bench exited ${code}\n${stderr.slice(-4000)}`).toBe(0);
  for (const name of rows) expect(stdout).toContain(`| ${name}`);
  expect(stdout).toContain("QUICK MODE");
  // durability off: a smoke test needs no flushes (docs/performance.md)
  expect(stdout).toContain("PostgreSQL fsync off");
}
