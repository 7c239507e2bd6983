/**
 * `npm run bench -- --quick`, second half: the dashboard, the replay, the brokers, egress
 * and issue 31's steady state and soak (11, 12, 17-20). The first half is
 * test/bench-quick.test.ts; test/helpers/bench-quick.ts says why two files.
 */
import { test } from "vitest";
import { expectQuickBench } from "./helpers/bench-quick.ts";
import { squidInstalled } from "./helpers/squid.ts";

const ROWS = [
  "11 dashboard",
  "12 replay",
  // the NATS JetStream half (RabbitMQ takes too long to start for the smoke test)
  "17 brokers",
  // through squid, where it is installed (.ci/run installs it)
  ...(squidInstalled ? ["18 egress"] : []),
  // a few days of history and a few seconds of soak: the harness of issue 31's figures
  "19 steady",
  "20 soak",
];

test("npm run bench -- --quick runs scenarios 11, 12 and 17-20 and prints their rows", async () => {
  await expectQuickBench([11, 12, 17, 18, 19, 20], ROWS);
}, 600_000);
