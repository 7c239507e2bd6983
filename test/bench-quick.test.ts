/**
 * `npm run bench -- --quick`, first half: the delivery scenarios (1-10, 13-16). The rest
 * runs in test/bench-quick-2.test.ts; test/helpers/bench-quick.ts says why two files.
 */
import { test } from "vitest";
import { expectQuickBench } from "./helpers/bench-quick.ts";

const ROWS = [
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
  "13 ordered",
  "14 adaptive",
  "15 tracing",
  "16 history",
];

test("npm run bench -- --quick runs scenarios 1-10 and 13-16 and prints their rows", async () => {
  await expectQuickBench([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 13, 14, 15, 16], ROWS);
}, 600_000);
