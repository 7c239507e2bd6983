/**
 * The database-outage rules of the enqueue batcher and the result writer
 * (docs/reliability.md), against a database that closes every connection
 * (helpers/refusing-database.ts): a batch that failed for that reason rejects every waiting
 * request at once, with no message-by-message retry; a result is retried until its lease
 * ends, and then dropped with a log line, so a flush does not wait forever.
 */
import pino from "pino";
import { afterAll, beforeAll, expect, test } from "vitest";
import { loadConfig } from "../src/config.ts";
import { makePool, type Pool } from "../src/db/pool.ts";
import { isDatabaseUnavailable } from "../src/db/unavailable.ts";
import { makeEnqueueBatcher } from "../src/queue/enqueue-batcher.ts";
import { makeResultWriter } from "../src/worker/result-writer.ts";
import { successResult } from "./helpers/delivery-result.ts";
import { linesInto } from "./helpers/log-lines.ts";
import { type RefusingDatabase, startRefusingDatabase } from "./helpers/refusing-database.ts";

let db: RefusingDatabase;
let pool: Pool;

beforeAll(async () => {
  db = await startRefusingDatabase();
  pool = makePool({ connectionString: db.url, max: 4 });
});

afterAll(async () => {
  await pool.end();
  await db.close();
});

test("a batch that failed on an unreachable database rejects every request, retrying none", async () => {
  const batcher = makeEnqueueBatcher(pool, 5);
  batcher.start();
  const before = db.connections;
  const results = await Promise.allSettled(
    Array.from({ length: 5 }, (_, i) =>
      batcher.enqueue({ appId: "app_x", eventType: "t", payload: `{"i":${i}}` }),
    ),
  );
  for (const r of results) {
    expect(r.status).toBe("rejected");
    expect(isDatabaseUnavailable((r as PromiseRejectedResult).reason)).toBe(true);
  }
  // One attempt per batch: the first message's batch, then the four that queued behind it.
  // Tried again one by one, the five would have made at least 1 + 5 attempts.
  expect(db.connections - before).toBeLessThanOrEqual(2);
  await batcher.stop();
});

test("a result that cannot be written is retried until its lease ends, then dropped and logged", async () => {
  const lines: string[] = [];
  const logger = pino({ level: "info" }, linesInto(lines));
  let clock = 0;
  const writer = makeResultWriter({
    pool,
    logger,
    flushBatch: 10,
    flushIntervalMs: 1,
    health: loadConfig({}).health,
    retry: { baseMs: 5, capMs: 10 },
    now: () => clock,
  });
  const result = successResult();

  writer.add(result, 1_000);
  const flushed = writer.flush();
  const attempts = () => lines.filter((l) => l.includes("writing results failed")).length;
  while (attempts() < 3) await new Promise((r) => setTimeout(r, 5));
  expect(lines.some((l) => l.includes("dropped"))).toBe(false);
  // the write reached the (refusing) database: warned as unreachable, not a bug
  expect(lines.find((l) => l.includes("writing results failed"))).toMatch(/"level":40/);
  clock = 2_000; // the lease is over
  await flushed;
  expect(writer.waiting).toBe(0);
  expect(lines.some((l) => l.includes("results not written before their lease ended"))).toBe(true);
});
