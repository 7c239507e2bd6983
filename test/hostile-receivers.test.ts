/**
 * Hostile receivers (docs/reliability.md, Poison rows; docs/delivery.md, Response bodies):
 * endpoints that answer with binary, compressed, NUL-laden or invalid UTF-8 bodies,
 * decompression bombs, endless, huge or dripping bodies, garbage status lines and absurd
 * headers sit in one app beside healthy endpoints. Every message still reaches every
 * healthy endpoint exactly once, every delivery ends (delivered or dead-lettered, nothing
 * left in flight), and every stored response is readable text of at most 1 KiB.
 *
 * On main before this, one NUL byte in one response failed the batched result write for
 * every tenant and the leases then sent the unrecorded deliveries again.
 *
 * End to end: the in-process API and one worker on a test database; the hostile receiver
 * writes raw bytes on a TCP socket on 127.0.0.1.
 */
import { brotliCompressSync, gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { deliveryCalls } from "./helpers/deliveries.ts";
import { type Harness, startHarness } from "./helpers/harness.ts";
import {
  type Behaviour,
  drippingBody,
  endlessBody,
  type HostileReceiver,
  rawBytes,
  rawResponse,
  startHostileReceiver,
} from "./helpers/hostile-receiver.ts";
import { expectNoInFlightCounters } from "./helpers/in-flight.ts";
import { type Receiver, startReceiver, waitFor } from "./helpers/receiver.ts";

let h: Harness;
let hostile: HostileReceiver;
let healthy: Receiver;

beforeAll(async () => {
  h = await startHarness();
  hostile = await startHostileReceiver();
  healthy = await startReceiver();
  // Small batches: results of hostile and healthy endpoints share many writes. The default
  // lease margin: the test's 1 s one, on a machine this process keeps busy writing and
  // reading megabytes, can run out before a result is written, and the row is then sent
  // again (at-least-once), which would blur the count of duplicates this test is about.
  h.startWorker({ flushBatch: 8, leaseMarginMs: 30_000 });
});

afterAll(async () => {
  await h?.close();
  await hostile?.close();
  await healthy?.close();
});

const { newApp, newEndpoint, send } = deliveryCalls(() => h);

const OK = "HTTP/1.1 200 OK";
const png = Buffer.from([
  0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0x0d, 0xff, 0xfe,
]);

/** Each hostile behaviour, and whether its answer counts as a 2xx (sent once, delivered). */
const BEHAVIOURS: Record<
  string,
  {
    behaviour: Behaviour;
    delivered: boolean;
    stored?: RegExp;
    timeoutMs?: number;
    /** adaptive in-flight limit on (the default) or off */
    adaptiveConcurrency?: "on" | "off";
  }
> = {
  "NUL in a text body": {
    behaviour: rawResponse(OK, "accepted\0\0rest", { "Content-Type": "text/plain" }),
    delivered: true,
    stored: /^\[binary body: 14 bytes; starts \(hex\) 6163636570746564000072657374\]$/,
  },
  "a binary (PNG) body": {
    behaviour: rawResponse(OK, png, { "Content-Type": "image/png" }),
    delivered: true,
    stored: /^\[binary body: 14 bytes; starts \(hex\) 89504e47/,
  },
  "a gzip body hookrelay never asked for": {
    behaviour: rawResponse(OK, gzipSync('{"status":"ok"}'), { "Content-Encoding": "gzip" }),
    delivered: true,
    stored: /^\{"status":"ok"\}$/,
  },
  "a gzip bomb (64 MiB of NUL from 64 KiB)": {
    behaviour: rawResponse(OK, gzipSync(Buffer.alloc(64 * 1024 * 1024)), {
      "Content-Encoding": "gzip",
    }),
    delivered: true,
    stored: /^\[binary body: more than 65,536 bytes; starts \(hex\) 0{64}\.\.\.\]$/,
  },
  "a brotli body": {
    behaviour: rawResponse(OK, brotliCompressSync("merci"), { "Content-Encoding": "br" }),
    delivered: true,
    stored: /^merci$/,
  },
  "an unknown encoding": {
    behaviour: rawResponse(OK, Buffer.from([0x28, 0xb5, 0x2f, 0xfd, 0]), {
      "Content-Encoding": "zstd",
    }),
    delivered: true,
    stored: /^\[zstd-encoded body: 5 bytes; starts \(hex\) 28b52ffd00\]$/,
  },
  "a 500 with invalid UTF-8": {
    behaviour: rawResponse("HTTP/1.1 500 Oops", Buffer.from([0xc3, 0x28, 0xa0, 0xa1, 0x00])),
    delivered: false,
    stored: /^\[binary body: 5 bytes; starts \(hex\) c328a0a100\]$/,
  },
  "a huge body (8 MiB)": {
    behaviour: rawResponse(OK, Buffer.alloc(8 * 1024 * 1024, "h")),
    delivered: true,
    stored: /^h{1024}$/,
  },
  "an endless chunked body": { behaviour: endlessBody(), delivered: true, stored: /^z{1024}$/ },
  "a body dripping past the timeout": {
    behaviour: drippingBody(100),
    delivered: false,
    timeoutMs: 1_000,
    // each timeout shrinks the adaptive limit, down to one attempt at a time: its 24
    // attempts of a second each would take 24 s in turn (test/adaptive-concurrency.test.ts
    // covers that); here the body is what is under test, so they go out together
    adaptiveConcurrency: "off",
  },
  "a garbage status line": { behaviour: rawBytes("HTTP/1.1 2OO OK\r\n\r\n"), delivered: false },
  "not HTTP at all": { behaviour: rawBytes("SSH-2.0-OpenSSH_9.6\r\n\0\xff"), delivered: false },
  "an absurd header (256 KiB)": {
    behaviour: rawResponse(OK, "ok", { "X-Absurd": "a".repeat(256 * 1024) }),
    delivered: false,
  },
  "a NUL inside a header value": {
    behaviour: rawBytes("HTTP/1.1 200 OK\r\nX-Bad: a\0b\r\nContent-Length: 2\r\n\r\nok"),
    delivered: false,
  },
  "status 999": { behaviour: rawResponse("HTTP/1.1 999 Weird", "?"), delivered: false },
  "a body shorter than its Content-Length": {
    behaviour: rawBytes("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort"),
    delivered: false,
  },
};

describe("hostile receivers beside healthy ones", () => {
  test("every message reaches every healthy endpoint once; every delivery ends; every stored body is readable", async () => {
    const appId = await newApp();
    const healthyPaths = ["/healthy-1", "/healthy-2", "/healthy-3"];
    const healthyIds = new Map<string, string>();
    // generous timeouts where an answer is due: on a busy machine a timed-out request is
    // sent again (at-least-once), which is not what this test counts
    for (const path of healthyPaths)
      healthyIds.set(
        path,
        await newEndpoint(appId, `${healthy.url}${path}`, { timeoutMs: 15_000 }),
      );
    const hostileIds = new Map<string, { path: string; endpointId: string }>();
    for (const [name, { behaviour, timeoutMs, adaptiveConcurrency }] of Object.entries(
      BEHAVIOURS,
    )) {
      const path = hostile.route(behaviour);
      // two attempts: the failing ones dead-letter quickly
      const endpointId = await newEndpoint(appId, `${hostile.url}${path}`, {
        maxAttempts: 2,
        timeoutMs: timeoutMs ?? 15_000,
        failureThreshold: 1_000,
        ...(adaptiveConcurrency && { adaptiveConcurrency }),
      });
      hostileIds.set(name, { path, endpointId });
    }

    const messages: string[] = [];
    for (let i = 0; i < 12; i++) messages.push(await send(appId, { n: i, click_id: `c${i}` }));

    // every delivery of the app ends: delivered or dead-lettered
    const total = messages.length * (healthyIds.size + hostileIds.size);
    await waitFor(
      async () => {
        const { rows } = await h.db.pool.query(
          `select count(*)::int as n from deliveries
           where app_id = $1 and status in ('delivered', 'dead_letter')`,
          [appId],
        );
        return rows[0].n === total;
      },
      90_000,
      `all ${total} deliveries to end`,
    );

    // healthy endpoints: each message exactly once, recorded as delivered
    for (const path of healthyPaths) {
      const ids = healthy.on(path).map((r) => String(r.headers["webhook-id"]));
      expect(ids.sort(), path).toEqual([...messages].sort());
    }
    const { rows: healthyRows } = await h.db.pool.query(
      "select status, count(*)::int as n from deliveries where endpoint_id = any ($1) group by status",
      [[...healthyIds.values()]],
    );
    expect(healthyRows).toEqual([{ status: "delivered", n: messages.length * healthyIds.size }]);

    for (const [name, { path, endpointId }] of hostileIds) {
      const expected = BEHAVIOURS[name]!;
      const { rows } = await h.db.pool.query(
        "select status, count(*)::int as n from deliveries where endpoint_id = $1 group by status",
        [endpointId],
      );
      const status = expected.delivered ? "delivered" : "dead_letter";
      expect(rows, name).toEqual([{ status, n: messages.length }]);
      // a 2xx is sent once, a failure once per attempt; every request that arrived is a
      // recorded attempt (none sent again because its result was never written)
      const arrivals = hostile.arrivals(path);
      expect(arrivals.length, name).toBe(messages.length * (expected.delivered ? 1 : 2));
      const attempts = await h.db.pool.query(
        `select response_body, octet_length(response_body) as bytes from attempts
         where endpoint_id = $1`,
        [endpointId],
      );
      expect(attempts.rows.length, name).toBe(arrivals.length);
      for (const row of attempts.rows) {
        expect(row.bytes ?? 0, name).toBeLessThanOrEqual(1024);
        if (expected.stored) expect(row.response_body, name).toMatch(expected.stored);
      }
    }
    await expectNoInFlightCounters(h.db.pool);
  }, 120_000);
});
