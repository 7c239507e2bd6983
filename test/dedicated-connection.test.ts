/**
 * The reconnecting dedicated connection (src/db/dedicated-connection.ts) that the liveness
 * lock and the work listener stand on: it runs onConnect on every new connection, comes
 * back after the server drops it (onLost, then onUp as a reconnect), counts a connection
 * that stops answering its check as lost, and stop() ends a connect still under way and
 * never reports a loss.
 */
import { afterAll, beforeAll, expect, test } from "vitest";
import { makeDedicatedConnection, pause } from "../src/db/dedicated-connection.ts";
import { silentLogger } from "../src/logger.ts";
import { createTestDb, type TestDb } from "./helpers/db.ts";
import { waitFor } from "./helpers/receiver.ts";

let db: TestDb;
beforeAll(async () => {
  db = await createTestDb({ template: false });
});
afterAll(() => db?.drop());

const backoff = { baseMs: 10, capMs: 50 };

async function pidOf(applicationName: string): Promise<number[]> {
  const { rows } = await db.pool.query(
    "select pid from pg_stat_activity where application_name = $1 and datname = current_database()",
    [applicationName],
  );
  return rows.map((r) => r.pid);
}

test("onConnect runs on every connection; a dropped one comes back as a reconnect; stop() reports no loss", async () => {
  const events: string[] = [];
  const conn = makeDedicatedConnection({
    connectionString: db.url,
    applicationName: "hookrelay-test-dedicated",
    name: "test",
    logger: silentLogger,
    backoff,
    async onConnect(c) {
      await c.query("select 1");
      events.push("connect");
    },
    onUp: (_c, { reconnected }) => events.push(reconnected ? "up again" : "up"),
    onLost: () => events.push("lost"),
  });
  await conn.start();
  await conn.start(); // twice: still one connection
  expect(events).toEqual(["connect", "up"]);
  expect(conn.client).not.toBeNull();
  const [pid] = await pidOf("hookrelay-test-dedicated");
  expect(await pidOf("hookrelay-test-dedicated")).toHaveLength(1);

  await db.pool.query("select pg_terminate_backend($1)", [pid]);
  await waitFor(() => events.includes("up again"), 10_000, "the reconnect");
  expect(events).toEqual(["connect", "up", "lost", "connect", "up again"]);
  expect(await pidOf("hookrelay-test-dedicated")).not.toContain(pid);

  await conn.stop();
  await conn.stop();
  expect(conn.client).toBeNull();
  expect(events.at(-1)).toBe("up again");
  await waitFor(async () => (await pidOf("hookrelay-test-dedicated")).length === 0);
});

test("a connection that stops answering its check counts as lost and is replaced", async () => {
  const lost: unknown[] = [];
  let ups = 0;
  const conn = makeDedicatedConnection({
    connectionString: db.url,
    applicationName: "hookrelay-test-check",
    name: "test",
    logger: silentLogger,
    backoff,
    check: { intervalMs: 20, timeoutMs: 200 },
    onUp: () => ups++,
    onLost: (err) => lost.push(err),
  });
  await conn.start();
  const first = conn.client!;
  // Busy for longer than the check waits: the next `select 1` queues behind it unanswered.
  void first.query("select pg_sleep(2)").catch(() => undefined);
  await waitFor(() => ups === 2, 10_000, "the replacement connection");
  expect(String(lost[0])).toMatch(/no test check answer within 200 ms/);
  expect(conn.client).not.toBe(first);
  await conn.stop();
});

test("stop() ends a connect that is still waiting inside onConnect; start() fails on an unreachable database", async () => {
  let entered = false;
  const conn = makeDedicatedConnection({
    connectionString: db.url,
    applicationName: "hookrelay-test-abort",
    name: "test",
    logger: silentLogger,
    async onConnect(_c, signal) {
      entered = true;
      await pause(600_000, signal);
    },
  });
  const starting = conn.start();
  await waitFor(() => entered, 10_000, "onConnect");
  await conn.stop();
  await starting;
  expect(conn.client).toBeNull();
  await waitFor(async () => (await pidOf("hookrelay-test-abort")).length === 0);

  const url = new URL(db.url);
  url.port = "1"; // nothing listens there
  const unreachable = makeDedicatedConnection({
    connectionString: url.toString(),
    applicationName: "hookrelay-test-unreachable",
    name: "test",
    logger: silentLogger,
  });
  await expect(unreachable.start()).rejects.toThrow();
  expect(unreachable.client).toBeNull();
  await unreachable.stop();
});
