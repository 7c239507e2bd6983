/**
 * The fault suite (`npm run faults`, docs/reliability.md) in its small size, as CI runs it:
 * worker SIGKILL churn and a PostgreSQL restart under fan-out load. It must pass: nothing
 * lost, no process exited by itself, no API 500 (the suite's own exit code says so). The
 * timings it prints are not asserted (a shared machine's timings are not test material);
 * only that every figure is there.
 */
import { expect, test } from "vitest";
import { runScript } from "./helpers/run-script.ts";

const runFaults = (args: string[]) => runScript("bin/faults.js", args);

/**
 * The small size with half its churn (10 s, a kill every 2.5 s, the same message rate):
 * still several kills, the PostgreSQL stop mid-churn and held requests cut by them; the
 * test proves the run passes, the full half-minute adds nothing it could fail on.
 */
const CHURN = ["--churn-seconds", "10", "--kill-every-seconds", "2.5", "--messages", "150"];

test("npm run faults -- --size small (shorter churn) passes and prints every figure", async () => {
  const { code, stdout, stderr } = await runFaults(["--size", "small", ...CHURN]);
  expect(code, `faults exited ${code}\n${stdout}\n${stderr.slice(-4000)}`).toBe(0);
  for (const figure of [
    /^LOST\s+0$/m,
    /^duplicated .*\s\d+$/m,
    /^SELF-EXITS .*\s0$/m,
    /^API 500 answers\s+0$/m,
    /^\/healthz during the outage\s+503 unreachable$/m,
    /^drain time after the churn\s+\d+\.\d s$/m,
    // "-" when no kill happened to cut a held request (possible on a crowded machine)
    /^crash-to-redelivery: median\s+(\d+\.\d s|-)$/m,
    /^worker SIGKILLs\s+[1-9]\d*$/m,
  ])
    expect(stdout).toMatch(figure);
  expect(stdout).toContain("PASS: lost 0, self-exits 0");
}, 300_000);
