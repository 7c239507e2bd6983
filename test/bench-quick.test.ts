/**
 * The bench's smoke mode (`npx hookrelay bench --quick`, the same as `npm run bench --
 * --quick`) runs in the test suite only to prove the harness works end to end: it must
 * exit 0 and print a table naming every scenario. No figure is asserted (timings on a
 * shared machine are not test material).
 */
import { expect, test } from "vitest";
import { runScript } from "./helpers/run-script.ts";
import { squidInstalled } from "./helpers/squid.ts";

const SCENARIOS = [
  "1 ceiling",
  "2 peer",
  "3 throughput",
  "4 latency",
  "5 ingest",
  "6 slow receiver",
  "7 isolation",
  "8 backlog",
  "9 memory",
  "10 compiled vs source",
  "11 dashboard",
  "12 replay",
  "13 ordered",
  "14 adaptive",
  "15 tracing",
  "16 history",
  // the NATS JetStream half (RabbitMQ takes too long to start for the smoke test)
  "17 brokers",
  // through squid, where it is installed (.ci/run installs it)
  ...(squidInstalled ? ["18 egress"] : []),
  // a few days of history and a few seconds of soak: the harness of issue 31's figures
  "19 steady",
  "20 soak",
];

/** Through the CLI, as `npx hookrelay bench` runs it (it starts bin/bench.js). */
const runQuickBench = () => runScript("dist/cli/main.js", ["bench", "--quick", "--no-write"]);

test("npm run bench -- --quick runs every scenario and prints the table", async () => {
  const { code, stdout, stderr } = await runQuickBench();
  expect(code, `bench exited ${code}\n${stderr.slice(-4000)}`).toBe(0);
  for (const name of SCENARIOS) expect(stdout).toContain(`| ${name}`);
  expect(stdout).toContain("QUICK MODE");
  // durability off: a smoke test needs no flushes (docs/performance.md)
  expect(stdout).toContain("PostgreSQL fsync off");
}, 600_000);
