/**
 * A bench or fault run that dies of an error nothing caught still stops what it started
 * (faults/lib/guard-run.ts): a full-size bench run once left its hookrelay worker running
 * for two hours, and a failover run its Patroni cluster, after an 'error' event without a
 * listener ended them.
 */
import { describe, expect, test } from "vitest";
import { runScript } from "./helpers/run-script.ts";

/** The guarded child run (TypeScript, through tsx), failing as `args` say. */
const run = (...args: string[]) =>
  runScript("test/helpers/guard-run-child.ts", args, ["--import", "tsx"]);

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** True once `pid` is gone (its SIGTERM is delivered and it is reaped), within 5 s. */
async function ends(pid: number): Promise<boolean> {
  for (const until = Date.now() + 5_000; Date.now() < until; )
    if (alive(pid)) await new Promise((r) => setTimeout(r, 50));
    else return true;
  return false;
}

describe.concurrent("a guarded run", { timeout: 30_000 }, () => {
  for (const [how, message] of [
    ["event", /failed: Error: lost/],
    ["rejection", /failed: Error: nobody awaited/],
  ] as const) {
    test(`an uncaught ${how} fails it (exit 1) after its cleanup stopped its children`, async () => {
      const r = await run(how);
      expect(r.code, r.stderr).toBe(1);
      expect(r.stderr).toMatch(message);
      expect(r.stdout).toContain("cleaned up\n");
      const pid = Number(/^child (\d+)$/m.exec(r.stdout)?.[1]);
      expect(pid).toBeGreaterThan(0);
      expect(await ends(pid)).toBe(true);
    });
  }

  test("the watchdog gives up (exit 2) after its cleanup", async () => {
    const r = await run("none", "0.5");
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toContain("gave up after 0.5 s");
    expect(r.stdout).toContain("cleaned up\n");
  });
});
