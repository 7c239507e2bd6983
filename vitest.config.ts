import { defineConfig } from "vitest/config";
import { LongestFirstSequencer } from "./test/helpers/longest-first-sequencer.ts";

export default defineConfig({
  test: {
    include: ["src/**/*.test.ts", "test/**/*.test.ts"],
    globalSetup: ["test/helpers/global-setup.ts"],
    // Integration tests start processes and servers; 2 cores are shared with PostgreSQL.
    testTimeout: 60_000,
    hookTimeout: 60_000,
    fileParallelism: true,
    maxWorkers: 2,
    pool: "forks",
    // One process per worker runs file after file (each file still gets its own database,
    // harness and servers): a fresh process and module graph per file cost more than the
    // tests of most files. Files that change process-wide state put it back in afterAll.
    isolate: false,
    // The slowest files start first, so both workers end together (the sequencer says why).
    sequence: { sequencer: LongestFirstSequencer },
  },
});
