/**
 * Hostile API input while deliveries run (docs/security.md, Input): deep nesting, bytes that
 * are not UTF-8, NUL escapes and lone surrogates, prototype keys, huge strings and numbers,
 * duplicate keys and oversized bodies are sent to the message route together with ordinary
 * messages (the payloads below are accepted as they are; the bodies after them refused). Every request is answered 2xx or 4xx, never 5xx; every message that was
 * accepted reaches the healthy endpoint exactly once, carrying the payload byte for byte;
 * nothing stays in flight and Object.prototype stays clean.
 *
 * End to end: the in-process API and one worker on a test database, a real receiver on
 * 127.0.0.1.
 */
import { afterAll, beforeAll, expect, test } from "vitest";
import { deliveryCalls } from "./helpers/deliveries.ts";
import { type Harness, startHarness } from "./helpers/harness.ts";
import { expectNoInFlightCounters } from "./helpers/in-flight.ts";
import { type Receiver, startReceiver, waitFor } from "./helpers/receiver.ts";

let h: Harness;
let rx: Receiver;

beforeAll(async () => {
  h = await startHarness();
  rx = await startReceiver();
  h.startWorker();
});

afterAll(async () => {
  await h?.close();
  await rx?.close();
});

const { newApp, newEndpoint } = deliveryCalls(() => h);

const nested = (depth: number) => `${'{"a":'.repeat(depth)}1${"}".repeat(depth)}`;
const nestedArrays = (depth: number) => `${"[".repeat(depth)}${"]".repeat(depth)}`;

/** Payload texts (a message body is `{"eventType":...,"payload":<text>}`), as strings. */
const PAYLOADS: Record<string, string> = {
  "nested 1,000 levels": nested(1_000),
  "nested 4,000 levels": nested(4_000),
  "arrays nested 100,000 levels": `{"a":${nestedArrays(100_000)}}`,
  "toString and valueOf as keys": '{"toString":"x","valueOf":{"hasOwnProperty":null}}',
  "a 900 KB string": `{"s":"${"x".repeat(900 * 1024)}"}`,
  "huge numbers": '{"big":123456789012345678901234567890,"exp":1e400,"tiny":-1e-400,"neg0":-0}',
  "duplicate keys": '{"a":1,"a":2,"a":{"a":3}}',
  "a NUL escape": '{"s":"before\\u0000after"}',
  "a lone surrogate escape": '{"s":"\\ud800"}',
  "a surrogate pair escape": '{"s":"\\ud83d\\ude00"}',
  "control characters": '{"s":"\\u0001\\u001f\\b\\f"}',
  "unicode keys": '{"ключ":"значение","🔑":"✓","\\u00e9":1}',
  "an empty object": "{}",
  "whitespace around": ' \n\t{ "a" : [ 1 , 2 ] }\r\n ',
};

/** Raw bodies that are not a message at all: each must be a 4xx. */
const REFUSED: Record<string, Buffer> = {
  "invalid UTF-8 in a string": Buffer.concat([
    Buffer.from('{"eventType":"hostile.x","payload":{"s":"'),
    Buffer.from([0xc3, 0x28, 0xff]),
    Buffer.from('"}}'),
  ]),
  "an overlong UTF-8 slash": Buffer.concat([
    Buffer.from('{"eventType":"hostile.x","payload":{"s":"'),
    Buffer.from([0xc0, 0xaf]),
    Buffer.from('"}}'),
  ]),
  "a UTF-16 body": Buffer.from('{"eventType":"hostile.x","payload":{}}', "utf16le"),
  "an empty body": Buffer.alloc(0),
  "a 2 MiB body": Buffer.from(`{"eventType":"hostile.x","payload":{"s":"${"y".repeat(2 << 20)}"}}`),
  "a null payload": Buffer.from('{"eventType":"hostile.x","payload":null}'),
  "an array payload": Buffer.from('{"eventType":"hostile.x","payload":[1]}'),
  // refused on purpose, so that no receiver's JSON parser is handed one (docs/security.md)
  "a __proto__ key": Buffer.from(
    '{"eventType":"hostile.x","payload":{"__proto__":{"polluted":1}}}',
  ),
  "constructor.prototype keys": Buffer.from(
    '{"eventType":"hostile.x","payload":{"constructor":{"prototype":{"polluted":1}}}}',
  ),
  "a string payload": Buffer.from('{"eventType":"hostile.x","payload":"x"}'),
  "not JSON": Buffer.from('{"eventType":"hostile.x","payload":{'),
  "a 2,000-character event type": Buffer.from(`{"eventType":"${"e".repeat(2000)}","payload":{}}`),
};

async function post(appId: string, body: Buffer | string) {
  const res = await h.api.inject({
    method: "POST",
    url: `/api/v1/app/${appId}/msg`,
    headers: { authorization: `Bearer ${h.adminKey}`, "content-type": "application/json" },
    payload: body,
  });
  let json: { id?: string; code?: string; detail?: string } = {};
  try {
    json = JSON.parse(res.body);
  } catch {}
  return { status: res.statusCode, json };
}

test("hostile message bodies among ordinary ones: never a 5xx, every accepted message delivered once, byte for byte", async () => {
  const appId = await newApp();
  await newEndpoint(appId, `${rx.url}/healthy`, { timeoutMs: 15_000 });

  const expected = new Map<string, string>(); // message id -> payload text
  const outcomes: Array<[string, number, string | undefined]> = [];
  const sends: Promise<void>[] = [];
  let ordinary = 0;
  for (const [name, text] of Object.entries(PAYLOADS)) {
    sends.push(
      post(appId, `{"eventType":"hostile.x","payload":${text}}`).then(({ status, json }) => {
        outcomes.push([name, status, json.code]);
        if (status === 202 || status === 200) expected.set(json.id!, text.trim());
      }),
    );
    // an ordinary message beside each hostile one
    const payload = `{"n":${ordinary++}}`;
    sends.push(
      post(appId, `{"eventType":"ordinary","payload":${payload}}`).then(({ status, json }) => {
        expect(status, JSON.stringify(json)).toBe(202);
        expected.set(json.id!, payload);
      }),
    );
  }
  // event types named like members of every object are plain names
  for (const type of ["__proto__", "constructor", "toString"]) {
    const payload = `{"type":"${type}"}`;
    sends.push(
      post(appId, `{"eventType":"${type}","payload":${payload}}`).then(({ status, json }) => {
        expect(status, JSON.stringify(json)).toBe(202);
        expected.set(json.id!, payload);
      }),
    );
  }
  for (const [name, body] of Object.entries(REFUSED)) {
    sends.push(
      post(appId, body).then(({ status, json }) => {
        outcomes.push([name, status, json.code]);
        expect(status, `${name}: ${JSON.stringify(json)}`).toBeGreaterThanOrEqual(400);
        expect(status, `${name}: ${JSON.stringify(json)}`).toBeLessThan(500);
        if (name.includes("proto")) expect(json.detail).toMatch(/prototype-pollution/);
      }),
    );
  }
  await Promise.all(sends);

  for (const [name, status] of outcomes) expect(status, name).toBeLessThan(500);
  // every payload above is a JSON object and is accepted as it is
  for (const name of Object.keys(PAYLOADS)) {
    expect(outcomes.find(([n]) => n === name)?.[1], name).toBe(202);
  }

  await waitFor(
    () => rx.on("/healthy").length >= expected.size,
    60_000,
    `${expected.size} deliveries to arrive`,
  );
  // a moment for a duplicate to show, had one been sent
  await waitFor(async () => {
    const { rows } = await h.db.pool.query(
      `select count(*)::int as n from deliveries where app_id = $1 and status <> 'delivered'`,
      [appId],
    );
    return rows[0].n === 0;
  }, 30_000);
  const arrived = rx.on("/healthy");
  expect(arrived.length).toBe(expected.size);
  for (const req of arrived) {
    const id = String(req.headers["webhook-id"]);
    expect(expected.has(id), id).toBe(true);
    expect(req.body, id).toBe(expected.get(id));
  }
  expect(new Set(arrived.map((r) => r.headers["webhook-id"])).size).toBe(expected.size);
  expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  await expectNoInFlightCounters(h.db.pool);
}, 120_000);
