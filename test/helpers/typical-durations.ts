/**
 * About how long the slowest test files take, in seconds, on the project's 2-core machine
 * during a full run: the longest-first sequencer (test/helpers/longest-first-sequencer.ts)
 * starts these first. Only their order matters, not the figures; a file missing here runs
 * after them (by the last run's duration on this machine, else by size). When a file gets
 * much faster or slower, move it; test/longest-first-sequencer.test.ts checks each name
 * is a test file that exists.
 */
export const TYPICAL_SECONDS: Readonly<Record<string, number>> = {
  "test/bench-quick.test.ts": 56,
  "test/bench-quick-2.test.ts": 55,
  "test/faults-failover.test.ts": 47,
  "test/hostile-junk.test.ts": 39,
  "test/pooler.test.ts": 31,
  "test/layout-browser.test.ts": 30,
  "test/package.test.ts": 28,
  "test/dashboard-browser.test.ts": 27,
  "test/workers.test.ts": 26,
  "test/embedded.test.ts": 24,
  "test/export-stream.test.ts": 24,
  "test/broker-rabbitmq.test.ts": 22,
  "test/worker-liveness.test.ts": 21,
  "test/portal-browser.test.ts": 20,
  "test/tracing.test.ts": 20,
  "test/ordering-workers.test.ts": 20,
  "test/db-restart.test.ts": 19,
  "test/ordering.test.ts": 18,
  "test/hostile-receivers.test.ts": 16,
  "test/faults-suite.test.ts": 15,
  "test/circuit-breaker.test.ts": 14,
  "test/charts-browser.test.ts": 13,
  "test/postgres-tls.test.ts": 12,
  "test/rate-limits.test.ts": 11,
  "test/cli-replay.test.ts": 11,
  "test/least-privilege.test.ts": 10,
  // four real builds of a small project (tsc), 7-19 s in full runs
  "test/build-script.test.ts": 10,
  // CPU-bound fuzzing: 64 s in a full run at load 15, where hostile-junk took 287
  "test/hostile-schema-bodies.test.ts": 9,
  "test/retention.test.ts": 9,
  "test/adaptive-concurrency.test.ts": 9,
  "test/delivery-claims.test.ts": 8,
  "test/history-partitions.test.ts": 8,
  "test/browse-explain.test.ts": 8,
};
