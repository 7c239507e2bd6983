/**
 * A result PostgreSQL refuses never holds back the others (docs/reliability.md, Poison
 * rows): the result writer splits the batch until the bad result is alone, writes every
 * other result in that same pass, and writes the bad one in a safe form; nothing is retried
 * in a loop. Texts with NUL characters are made storable before they are sent.
 *
 * A real PostgreSQL (a cloned test database); results go straight to the writer.
 */
import { randomUUID } from "node:crypto";
import pino from "pino";
import { afterAll, beforeAll, expect, test } from "vitest";
import { loadConfig } from "../src/config.ts";
import type { DeliveryResult } from "../src/queue/record-results.ts";
import { makeResultWriter } from "../src/worker/result-writer.ts";
import { createTestDb, type TestDb } from "./helpers/db.ts";
import { successResult } from "./helpers/delivery-result.ts";
import { linesInto } from "./helpers/log-lines.ts";

let db: TestDb;

beforeAll(async () => {
  db = await createTestDb();
});

afterAll(async () => {
  await db?.drop();
});

function result(n: number, changes: Partial<DeliveryResult> = {}): DeliveryResult {
  return successResult({
    // no such delivery: its state is not changed, but its attempt row is written
    deliveryId: 1_000_000 + n,
    claimToken: randomUUID(),
    messageId: `msg_poison_${n}`,
    endpointId: "ep_poison",
    appId: "app_poison",
    url: `http://127.0.0.1:9/hook?n=${n}`,
    responseBody: `answer ${n}`,
    ...changes,
  });
}

function capturedLogger() {
  const lines: Array<{ msg: string; [k: string]: unknown }> = [];
  const logger = pino({ level: "info" }, linesInto(lines, JSON.parse));
  return { logger, lines };
}

test("one refused result among 40: the 39 are written at once, the bad one in a safe form", async () => {
  const { logger, lines } = capturedLogger();
  let statements = 0;
  const counting = {
    query: (...args: Parameters<typeof db.pool.query>) => {
      statements++;
      return db.pool.query(...args);
    },
  } as typeof db.pool;
  const writer = makeResultWriter({
    pool: counting,
    logger,
    flushBatch: 1_000,
    flushIntervalMs: 1,
    health: loadConfig({}).health,
    retry: { baseMs: 5, capMs: 10 },
  });
  for (let n = 0; n < 40; n++) {
    // an HTTP status no integer column holds: PostgreSQL refuses the whole statement (22003)
    writer.add(result(n, n === 23 ? { statusCode: 2 ** 40, responseBody: "bad\0body" } : {}));
  }
  await writer.flush();

  const { rows } = await db.pool.query(
    `select message_id, status_code, response_body from attempts
     where endpoint_id = 'ep_poison' order by message_id`,
  );
  expect(rows).toHaveLength(40);
  for (const row of rows) {
    if (row.message_id === "msg_poison_23") {
      expect(row.status_code).toBeNull();
      expect(row.response_body).toBe("[response body not stored: the database refused it (22003)]");
    } else {
      expect(row.status_code).toBe(200);
      expect(row.response_body).toBe(`answer ${row.message_id.slice("msg_poison_".length)}`);
    }
  }
  // 1 + 2 per halving of 40 rows (6), and the safe form: no retry loop
  expect(statements).toBeLessThanOrEqual(1 + 2 * 6 + 1);
  expect(writer.poisoned).toBe(1);
  expect(writer.dropped).toBe(0);
  expect(lines.some((l) => l.msg.includes("writing it in a safe form"))).toBe(true);
  expect(lines.some((l) => l.msg.includes("will retry"))).toBe(false);
});

test("NUL characters in a response body, an error and a URL are stored as U+FFFD, in one statement", async () => {
  const { logger } = capturedLogger();
  const writer = makeResultWriter({
    pool: db.pool,
    logger,
    flushBatch: 1_000,
    flushIntervalMs: 1,
    health: loadConfig({}).health,
  });
  writer.add(
    result(100, {
      success: false,
      nextStatus: "failed",
      statusCode: 500,
      error: "HTTP 500\0",
      responseBody: "a\0b",
      url: "http://127.0.0.1:9/x?v=\0",
    }),
  );
  writer.add(result(101));
  await writer.flush();
  const { rows } = await db.pool.query(
    `select message_id, error, response_body, url from attempts
     where message_id in ('msg_poison_100', 'msg_poison_101') order by message_id`,
  );
  expect(rows[0]).toEqual({
    message_id: "msg_poison_100",
    error: "HTTP 500\uFFFD",
    response_body: "a\uFFFDb",
    url: "http://127.0.0.1:9/x?v=\uFFFD",
  });
  expect(rows[1].response_body).toBe("answer 101");
  expect(writer.poisoned).toBe(0);
});
