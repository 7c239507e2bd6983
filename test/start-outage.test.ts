/**
 * A database that goes away between a process's start-up steps (docs/reliability.md): each
 * step that needs the database waits for it, for at most HOOKRELAY_DB_STARTUP_WAIT_MS, as
 * the first one does. Found by the fault suite: a worker restarted as PostgreSQL began a
 * shutdown got through its first steps, then its liveness connection was refused ("the
 * database system is shutting down") and the process exited 1 instead of waiting.
 *
 * Through a TCP forwarder that cuts the worker's liveness connections (told apart by their
 * application_name) while carrying every other one, so the outage meets that step alone.
 */
import { afterAll, beforeAll, expect, test } from "vitest";
import { makeProcessLogging, type Runtime, startRuntime } from "../src/runtime.ts";
import { createTestDb, type TestDb } from "./helpers/db.ts";
import { testConfig } from "./helpers/harness.ts";
import { linesInto } from "./helpers/log-lines.ts";
import { waitFor } from "./helpers/receiver.ts";
import { startTcpForwarder, type TcpForwarder } from "./helpers/tcp-forwarder.ts";

let db: TestDb;
let forwarder: TcpForwarder;
let runtime: Runtime | null = null;
/** liveness connections cut so far, and how many to cut */
let cut = 0;
const CUTS = 3;

beforeAll(async () => {
  db = await createTestDb();
  const port = Number(new URL(db.url).port);
  forwarder = await startTcpForwarder(port, {
    refuse: (first) => {
      if (!first.includes("hookrelay-liveness") || cut >= CUTS) return false;
      cut++;
      return true;
    },
  });
});

afterAll(async () => {
  await runtime?.stop();
  await forwarder?.close();
  await db?.drop();
});

test("a worker whose liveness connection is refused at start waits for the database, then runs", async () => {
  const url = new URL(db.url);
  url.port = String(forwarder.port);
  const config = testConfig({
    databaseUrl: url.href,
    host: "127.0.0.1",
    port: 0,
    logLevel: "info",
    dbStartupWaitMs: 30_000,
  });
  const lines: string[] = [];
  const destination = linesInto(lines);
  runtime = await startRuntime(
    config,
    { api: false, worker: true },
    makeProcessLogging(config, destination),
  );
  expect(cut).toBe(CUTS);
  const waited = lines.filter((l) => l.includes("database unreachable at start; waiting for it"));
  expect(waited).toHaveLength(1);
  expect(lines.some((l) => l.includes('"msg":"database reachable"'))).toBe(true);
  // it runs: its liveness lock is held, so it claims
  await waitFor(
    async () =>
      (
        await db.pool.query(
          "select count(*)::int as n from pg_stat_activity where application_name = 'hookrelay-liveness'",
        )
      ).rows[0].n === 1,
    10_000,
    "the worker's liveness connection",
  );
});
