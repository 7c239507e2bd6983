/**
 * Deadlines and response limits of a delivery: a hanging endpoint times out at its
 * deadline without holding back a healthy one, a dripping body is cut off by the absolute
 * deadline, reading stops at 64 KiB, a connection dropped mid-body fails at once, and at
 * most 1 KiB of a response body is stored (cut on a UTF-8 boundary).
 *
 * End to end: the in-process API and one worker on a test database, sending real HTTP
 * requests to real receivers on 127.0.0.1. Each test uses its own app and endpoints (own
 * receiver paths), so the tests share the worker but not their data.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { withTransaction } from "../src/db/pool.ts";
import { enqueueMessage } from "../src/queue/enqueue-message.ts";
import {
  deliveryCalls,
  type Script,
  type ScriptedReceiver,
  startScriptedReceiver,
} from "./helpers/deliveries.ts";
import { type Harness, startHarness } from "./helpers/harness.ts";
import { startRawServer } from "./helpers/raw-server.ts";
import { startReceiver, waitFor } from "./helpers/receiver.ts";

let h: Harness;
/** The main receiver: replies are scripted per path (default 200). */
let rx: ScriptedReceiver;

beforeAll(async () => {
  h = await startHarness();
  rx = await startScriptedReceiver();
  h.startWorker();
});

afterAll(async () => {
  await h?.close();
  await rx?.close();
});

const { newApp, newEndpoint, send, deliveryRow, waitForStatus, attemptRows } = deliveryCalls(
  () => h,
);
/** A fresh receiver path with an optional reply script. */
const route = (script?: Script) => rx.route(script);

// ---------------------------------------------------------------- timeouts and limits

describe("timeouts and response limits", () => {
  test("a hanging endpoint times out at its deadline and does not hold back a healthy one", async () => {
    const hangRx = await startReceiver(() => ({ hang: true }));
    try {
      const appId = await newApp();
      const okPath = route();
      const hangId = await newEndpoint(appId, `${hangRx.url}/hang`, {
        timeoutMs: 1_000,
        maxAttempts: 1,
        // all eight at once on both endpoints, as a claim takes them without adaptive
        // concurrency (with it, each limit starts at one: test/adaptive-concurrency.test.ts)
        adaptiveConcurrency: "off",
      });
      const okId = await newEndpoint(appId, `${rx.url}${okPath}`, { adaptiveConcurrency: "off" });

      // All messages commit together, so the worker claims both endpoints' rows in one batch.
      const n = 8;
      const ids = await withTransaction(h.db.pool, async (client) => {
        const out: string[] = [];
        for (let i = 0; i < n; i++) {
          const r = await enqueueMessage(
            client,
            { appId, eventType: "test.event", payload: `{"i":${i}}` },
            5,
          );
          expect(r.deliveries).toBe(2);
          out.push(r.messageId);
        }
        return out;
      });

      await waitFor(() => rx.on(okPath).length === n, 10_000, "every healthy delivery");
      await waitFor(
        async () => {
          const { rows } = await h.db.pool.query(
            "select count(*)::int as n from deliveries where endpoint_id = $1 and status = 'dead_letter'",
            [hangId],
          );
          return rows[0].n === n;
        },
        15_000,
        "every hanging delivery to time out",
      );

      const { rows: timeouts } = await h.db.pool.query(
        "select error_kind, latency_ms, status_code, created_at from attempts where endpoint_id = $1",
        [hangId],
      );
      expect(timeouts).toHaveLength(n);
      for (const t of timeouts) {
        expect(t.error_kind).toBe("timeout");
        expect(t.status_code).toBeNull();
        // ended by its own deadline, not by anything sooner (a little slack for rounding)
        expect(t.latency_ms).toBeGreaterThanOrEqual(900);
      }
      // Order, not duration: every healthy arrival precedes the first timeout row.
      const lastHealthy = Math.max(...rx.on(okPath).map((r) => r.at));
      const firstTimeout = Math.min(...timeouts.map((t) => (t.created_at as Date).getTime()));
      expect(lastHealthy).toBeLessThan(firstTimeout);
      expect(new Set(hangRx.requests.map((r) => r.headers["webhook-id"]))).toEqual(new Set(ids));
      // The hanging requests ran side by side: the last was sent before the first timed
      // out (one after another, each would wait for the previous one's deadline).
      const hangArrivals = hangRx.requests.map((r) => r.at);
      expect(Math.max(...hangArrivals)).toBeLessThan(firstTimeout);
      console.log(
        `hanging endpoint: latencies ${timeouts.map((t) => t.latency_ms).join(", ")} ms on a 1000 ms deadline`,
      );
      for (const id of ids) expect((await deliveryRow(id, okId))?.status).toBe("delivered");
    } finally {
      await hangRx.close();
    }
  });

  test("a body that drips one byte every 200 ms is cut off by the absolute deadline", async () => {
    const arrivals: number[] = [];
    /** bytes written when the connection closed, by request */
    const closedAfter: number[] = [];
    const server = await startRawServer((res) => {
      arrivals.push(Date.now());
      res.writeHead(200, { "content-type": "text/plain" });
      res.flushHeaders();
      let sent = 0;
      const timer = setInterval(() => {
        if (++sent > 50) {
          clearInterval(timer);
          res.end();
        } else {
          res.write("x");
        }
      }, 200);
      res.on("close", () => {
        clearInterval(timer);
        closedAfter.push(sent);
      });
    });
    try {
      const appId = await newApp();
      const endpointId = await newEndpoint(appId, `${server.url}/drip`, {
        timeoutMs: 1_000,
        maxAttempts: 1,
      });
      const msgId = await send(appId);

      await waitFor(
        () => arrivals.length === 1,
        10_000,
        "the request to reach the dripping server",
      );
      await waitFor(
        async () => (await attemptRows(msgId)).length === 1,
        15_000,
        "the timeout to be recorded",
      );
      const [attempt] = await attemptRows(msgId);
      // A timeout, and the connection closed by hookrelay while the body was still
      // dripping: a deadline per read would have waited for all 50 bytes (and succeeded).
      expect(attempt!.error_kind).toBe("timeout");
      expect(attempt!.latency_ms).toBeGreaterThanOrEqual(900);
      await waitFor(() => closedAfter.length === 1, 5_000, "the connection to close");
      expect(closedAfter[0]).toBeLessThan(50);
      const row = await waitForStatus(msgId, endpointId, "dead_letter", 5_000);
      expect(row.last_error_kind).toBe("timeout");
    } finally {
      await server.close();
    }
  });

  test("reading stops at 64 KiB: a 200 whose body never ends is delivered at once", async () => {
    let closed = false;
    const server = await startRawServer((res) => {
      res.writeHead(200, { "content-type": "text/plain" });
      // 96 KiB, then the body stays open: only a reader that stops at 64 KiB finishes early.
      res.write("y".repeat(96 * 1024));
      res.on("close", () => {
        closed = true;
      });
    });
    try {
      const appId = await newApp();
      const endpointId = await newEndpoint(appId, `${server.url}/endless`, {
        timeoutMs: 5_000,
        maxAttempts: 1,
      });
      const msgId = await send(appId);

      // delivered, not timed out at its 5 s deadline waiting for the end of the body
      await waitForStatus(msgId, endpointId, "delivered", 15_000);
      const [attempt] = await attemptRows(msgId);
      expect(attempt!.outcome).toBe("success");
      expect(attempt!.status_code).toBe(200);
      expect(attempt!.error_kind).toBeNull();
      expect(attempt!.response_body).toBe("y".repeat(1_024));
      // The rest of the response was not waited for: the connection was dropped.
      await waitFor(() => closed, 2_000, "the connection to be dropped");
    } finally {
      await server.close();
    }
  });

  test("a connection dropped halfway through the body fails the attempt at once, not at its deadline", async () => {
    const server = await startRawServer((res) => {
      res.writeHead(200, { "content-type": "text/plain", "content-length": "1000" });
      res.write("z".repeat(100));
      setTimeout(() => res.socket?.destroy(), 50);
    });
    try {
      const appId = await newApp();
      const endpointId = await newEndpoint(appId, `${server.url}/cut`, {
        timeoutMs: 8_000,
        maxAttempts: 1,
      });
      const msgId = await send(appId);

      // a connection error, not the 8 s deadline's timeout
      const row = await waitForStatus(msgId, endpointId, "dead_letter", 15_000);
      expect(row.last_error_kind).toBe("connection");
      const [attempt] = await attemptRows(msgId);
      expect(attempt!.outcome).toBe("failure");
      expect(attempt!.error_kind).toBe("connection");
    } finally {
      await server.close();
    }
  });

  test("a response body over 64 KiB is cut and at most 1 KiB is stored", async () => {
    const appId = await newApp();
    // 3-byte characters: 1024 is not a multiple of 3, so the cut must respect UTF-8.
    const big = "€".repeat(40_000); // 120 000 bytes
    const path = route(() => ({ status: 200, body: big }));
    const endpointId = await newEndpoint(appId, `${rx.url}${path}`);
    const msgId = await send(appId);

    await waitForStatus(msgId, endpointId, "delivered");
    const [attempt] = await attemptRows(msgId);
    expect(attempt!.outcome).toBe("success");
    expect(attempt!.body_bytes).toBeGreaterThan(0);
    expect(attempt!.body_bytes).toBeLessThanOrEqual(1_024);
    expect(attempt!.response_body).not.toContain("\uFFFD");
    expect(big.startsWith(attempt!.response_body!)).toBe(true);
  });
});
