/**
 * The liveness timings are settings a test can shorten (docs/worker-liveness.md): the
 * judging delay comes from HOOKRELAY_LIVENESS_JUDGE_AFTER_MS to both kinds of liveness
 * (the lock on a session, the heartbeat row behind a pooler), and a lock liveness runs its
 * heartbeat at the timings it is given.
 */
import net, { type AddressInfo, type Socket } from "node:net";
import pino from "pino";
import { afterAll, beforeAll, expect, test } from "vitest";
import { loadConfig } from "../src/config.ts";
import { silentLogger } from "../src/logger.ts";
import { makeSessionBound } from "../src/session-bound.ts";
import { LIVENESS, makeLiveness } from "../src/worker/liveness.ts";
import { createTestDb, type TestDb } from "./helpers/db.ts";
import { waitFor } from "./helpers/receiver.ts";

let db: TestDb;
beforeAll(async () => {
  db = await createTestDb();
});
afterAll(() => db?.drop());

test("HOOKRELAY_LIVENESS_JUDGE_AFTER_MS reaches the lock and the heartbeat liveness", async () => {
  expect(loadConfig({}).worker.livenessJudgeAfterMs).toBe(LIVENESS.judgeAfterMs);
  const config = loadConfig({ HOOKRELAY_LIVENESS_JUDGE_AFTER_MS: "250" });
  expect(config.worker.livenessJudgeAfterMs).toBe(250);
  for (const sessionUrl of [db.url, null]) {
    const parts = makeSessionBound({
      mode: {
        pooler: sessionUrl ? "direct" : "transaction",
        sessionUrl,
        pollIntervalMs: 50,
        line: "",
      },
      pool: db.pool,
      connectionString: db.url,
      config,
      logger: silentLogger,
      onWork: () => undefined,
    });
    expect(parts.liveness.judgeAfterMs).toBe(250);
    await parts.end();
  }
});

/** A TCP proxy to PostgreSQL whose current connections can be frozen, then cut. */
async function startProxy(target: URL) {
  const pairs: { client: Socket; server: Socket }[] = [];
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(target.port), target.hostname);
    client.pipe(upstream).pipe(client);
    const drop = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on("error", drop);
    upstream.on("error", drop);
    pairs.push({ client, server: upstream });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const url = new URL(target);
  url.hostname = "127.0.0.1";
  url.port = String((server.address() as AddressInfo).port);
  return {
    url: url.toString(),
    /** nothing more passes on the connections open now, in either direction */
    freeze: () => {
      const frozen = [...pairs];
      for (const p of frozen) {
        p.client.unpipe();
        p.server.unpipe();
        p.client.pause();
        p.server.pause();
      }
      return () => {
        for (const p of frozen) {
          p.client.destroy();
          p.server.destroy();
        }
      };
    },
    close: () => new Promise((r) => server.close(r)),
  };
}

test("a lock liveness whose connection stops answering lets go at the heartbeat timings it was given, and takes its lock back", async () => {
  const proxy = await startProxy(new URL(db.url));
  const lines: { msg: string; err?: { message: string } }[] = [];
  const logger = pino({ level: "debug" }, { write: (s: string) => void lines.push(JSON.parse(s)) });
  const liveness = makeLiveness({
    connectionString: proxy.url,
    logger,
    timings: {
      heartbeatMs: 20,
      heartbeatTimeoutMs: 150,
      reconnectBaseMs: 10,
      reconnectCapMs: 50,
      lockRetryMs: 20,
    },
  });
  try {
    await liveness.start();
    expect(liveness.held).toBe(true);
    const lock = liveness.lock;
    // The old session keeps the lock while frozen: the new one waits for it.
    const cut = proxy.freeze();
    await waitFor(() => !liveness.held, 15_000, "the lock let go");
    const lost = lines.find((l) => l.msg.startsWith("liveness connection lost"));
    expect(lost?.err?.message).toMatch(/no liveness check answer within 150 ms/);
    cut();
    await waitFor(() => liveness.held, 15_000, "the lock held again");
    expect(liveness.lock).toBe(lock);
  } finally {
    await liveness.stop();
    await proxy.close();
  }
});
