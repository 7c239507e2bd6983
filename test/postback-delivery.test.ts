/**
 * Postback endpoints delivering for real (README.md, Postbacks): the in-process API and a
 * worker on a test database, sending to a real receiver on 127.0.0.1. A GET with its query
 * rendered from the payload and encoded, a PUT, a form POST, each signed; a payload
 * without a templated field (a dead letter of its own kind, nothing sent, circuit left
 * alone) and the empty-string choice; body success rules retried and permanent; the URL
 * token and click ids masked in stored attempts.
 */
import { createHmac } from "node:crypto";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { deliveryCalls, type Script } from "./helpers/deliveries.ts";
import { type Harness, startHarness } from "./helpers/harness.ts";
import { type Received, type Receiver, startReceiver } from "./helpers/receiver.ts";

let h: Harness;
let rx: Receiver;
/** reply scripts by path prefix: a template adds to the path */
const scripts = new Map<string, Script>();
const under = (req: Received, prefix: string) =>
  req.path === prefix || req.path.startsWith(`${prefix}/`) || req.path.startsWith(`${prefix}?`);

beforeAll(async () => {
  h = await startHarness();
  rx = await startReceiver((req) => {
    for (const [prefix, script] of scripts)
      if (under(req, prefix)) return script(req, requestsUnder(prefix).length - 1);
    return { status: 200 };
  });
  h.startWorker();
});
afterAll(async () => {
  await h?.close();
  await rx?.close();
});

const { newApp, newEndpoint, send, waitForStatus, attemptRows } = deliveryCalls(() => h);

let routes = 0;
/** A fresh receiver path prefix with an optional reply script. */
function route(script?: Script): string {
  const prefix = `/pb-${++routes}`;
  if (script) scripts.set(prefix, script);
  return prefix;
}
const requestsUnder = (prefix: string) => rx.requests.filter((r) => under(r, prefix));

/** Sends a raw JSON message body (numbers exactly as written); returns the message id. */
async function sendRaw(appId: string, payloadText: string, eventId?: string): Promise<string> {
  const raw = `{"eventType":"conversion.approved",${eventId ? `"eventId":"${eventId}",` : ""}"payload":${payloadText}}`;
  const res = await h.call("POST", `/api/v1/app/${appId}/msg`, raw);
  expect(res.status, JSON.stringify(res.body)).toBe(202);
  return res.body.id;
}

/** The request carries a Standard Webhooks v1 signature over `body` with the endpoint's secret. */
async function expectSigned(appId: string, endpointId: string, req: Received, body: string) {
  const secret = await h.call("GET", `/api/v1/app/${appId}/endpoint/${endpointId}/secret`);
  const key = Buffer.from(secret.body.key.slice("whsec_".length), "base64");
  const expected = createHmac("sha256", key)
    .update(`${req.headers["webhook-id"]}.${req.headers["webhook-timestamp"]}.${body}`)
    .digest("base64");
  expect(String(req.headers["webhook-signature"]).split(" ")).toContain(`v1,${expected}`);
}

async function storedUrls(msgId: string): Promise<string[]> {
  const { rows } = await h.db.pool.query(
    "select url from attempts where message_id = $1 order by id",
    [msgId],
  );
  return rows.map((r) => r.url);
}

describe("methods and bodies", () => {
  test("GET: the query arrives rendered and encoded, numbers as sent, no body, signed; the stored URL masks click id and token", async () => {
    const appId = await newApp();
    const path = route();
    const endpointId = await newEndpoint(
      appId,
      `${rx.url}${path}/{$token}/pb?cid={click_id}&payout={payout}&sub={user.sub}&n={$attempt}&m={$message_id}&e={$event_id}`,
      { method: "GET", urlToken: "tok/en 42" },
    );
    const msgId = await sendRaw(
      appId,
      '{"click_id":"c l&i=ck/1","payout":99.50,"user":{"sub":"ü+?#"},"big":1}',
      "order-9",
    );
    await waitForStatus(msgId, endpointId, "delivered");

    const [req] = requestsUnder(path);
    expect(req!.method).toBe("GET");
    expect(req!.path).toBe(
      `${path}/tok%2Fen%2042/pb?cid=c%20l%26i%3Dck%2F1&payout=99.50&sub=%C3%BC%2B%3F%23&n=1&m=${msgId}&e=order-9`,
    );
    expect(req!.body).toBe("");
    expect(req!.headers["content-type"]).toBeUndefined();
    expect(req!.headers["content-length"] ?? "0").toBe("0");
    expect(req!.headers["webhook-id"]).toBe(msgId);
    // the signature covers id, timestamp and the (empty) body
    await expectSigned(appId, endpointId, req!, "");

    const [url] = await storedUrls(msgId);
    expect(url).toBe(
      `${rx.url}${path}/***/pb?cid=***&payout=99.50&sub=%C3%BC%2B%3F%23&n=1&m=${msgId}&e=order-9`,
    );
    const api = await h.call("GET", `/api/v1/app/${appId}/attempt/msg/${msgId}`);
    expect(api.body.data[0].url).toBe(url);
  });

  test("PUT sends the JSON payload byte for byte to the rendered URL", async () => {
    const appId = await newApp();
    const path = route();
    const endpointId = await newEndpoint(appId, `${rx.url}${path}/orders/{order.id}`, {
      method: "PUT",
    });
    const payloadText = '{"order":{"id":"A/7"},"total":10.00}';
    const msgId = await sendRaw(appId, payloadText);
    await waitForStatus(msgId, endpointId, "delivered");
    const [req] = requestsUnder(path);
    expect(req).toMatchObject({ method: "PUT", path: `${path}/orders/A%2F7`, body: payloadText });
    expect(req!.headers["content-type"]).toMatch(/^application\/json/);
    await expectSigned(appId, endpointId, req!, payloadText);
  });

  test("bodyFormat form: the top-level fields form-encoded, signed over the form text", async () => {
    const appId = await newApp();
    const path = route();
    const endpointId = await newEndpoint(appId, `${rx.url}${path}`, { bodyFormat: "form" });
    const msgId = await sendRaw(appId, '{"clickid":"x y","payout":99.50,"ok":true,"meta":{"a":1}}');
    await waitForStatus(msgId, endpointId, "delivered");
    const [req] = requestsUnder(path);
    expect(req!.method).toBe("POST");
    expect(req!.headers["content-type"]).toBe("application/x-www-form-urlencoded");
    expect(req!.body).toBe("clickid=x+y&payout=99.50&ok=true&meta=%7B%22a%22%3A1%7D");
    expect(Object.fromEntries(new URLSearchParams(req!.body))).toEqual({
      clickid: "x y",
      payout: "99.50",
      ok: "true",
      meta: '{"a":1}',
    });
    await expectSigned(appId, endpointId, req!, req!.body);
  });
});

describe("missing fields", () => {
  test("by default a dead letter of kind missing_field, nothing sent, circuit untouched, named in dead-letter analysis", async () => {
    const appId = await newApp();
    const path = route();
    const endpointId = await newEndpoint(appId, `${rx.url}${path}?cid={click_id}&p={payout}`, {
      method: "GET",
      failureThreshold: 1,
    });
    const msgId = await sendRaw(appId, '{"payout":"3"}');
    const row = await waitForStatus(msgId, endpointId, "dead_letter");
    expect(row).toMatchObject({
      attempt_count: 1,
      last_error_kind: "missing_field",
      last_status_code: null,
    });
    expect(requestsUnder(path)).toHaveLength(0);
    const [attempt] = await attemptRows(msgId);
    expect(attempt).toMatchObject({
      outcome: "failure",
      error_kind: "missing_field",
      status_code: null,
    });

    // the next message has the field: it goes out, the circuit never opened (threshold 1)
    const second = await sendRaw(appId, '{"click_id":"k1","payout":"4"}');
    await waitForStatus(second, endpointId, "delivered");
    expect(requestsUnder(path).map((r) => r.path)).toEqual([`${path}?cid=k1&p=4`]);
    const health = await h.call("GET", `/api/v1/app/${appId}/endpoint/${endpointId}/health`);
    expect(health.body.circuit.state ?? health.body.circuitState).toBe("closed");

    const dead = await h.call("GET", `/api/v1/dead-letters?endpoint_id=${endpointId}`);
    expect(dead.body.data).toHaveLength(1);
    expect(dead.body.data[0]).toMatchObject({ errorKind: "missing_field" });
    expect(dead.body.data[0].error).toMatch(/\{click_id\} has no value/);
    const analysis = await h.call("GET", `/api/v1/dead-letters/analysis?endpoint_id=${endpointId}`);
    expect(analysis.body.data[0]).toMatchObject({ deadCount: 1, pattern: "missing_field" });
  });

  test('missingFields "empty": the field renders as an empty value', async () => {
    const appId = await newApp();
    const path = route();
    const endpointId = await newEndpoint(appId, `${rx.url}${path}?cid={click_id}&p={payout}`, {
      method: "GET",
      missingFields: "empty",
    });
    const msgId = await sendRaw(appId, '{"payout":null,"click_id":"z"}');
    await waitForStatus(msgId, endpointId, "delivered");
    expect(requestsUnder(path).map((r) => r.path)).toEqual([`${path}?cid=z&p=`]);
  });
});

describe("success rules on the body", () => {
  test("a 200 with success=false is retried until the body passes", async () => {
    const appId = await newApp();
    const path = route((_req, n) => ({
      status: 200,
      body: n < 2 ? "success=false" : "success=true",
    }));
    const endpointId = await newEndpoint(appId, `${rx.url}${path}`, {
      successRule: { bodyContains: ["success=true"] },
    });
    const msgId = await send(appId, { click_id: "abc" });
    const row = await waitForStatus(msgId, endpointId, "delivered");
    expect(row.attempt_count).toBe(3);
    const rows = await attemptRows(msgId);
    expect(rows.map((r) => [r.status_code, r.outcome, r.error_kind])).toEqual([
      [200, "failure", "body_rule"],
      [200, "failure", "body_rule"],
      [200, "success", null],
    ]);
  });

  test("a DUPLICATE answer with onFailure permanent is a dead letter after one attempt", async () => {
    const appId = await newApp();
    const path = route(() => ({ status: 200, body: "Error: DUPLICATE conversion" }));
    const endpointId = await newEndpoint(appId, `${rx.url}${path}?cid={click_id}`, {
      method: "GET",
      successRule: { bodyNotContains: ["duplicate"], ignoreCase: true, onFailure: "permanent" },
    });
    const msgId = await send(appId, { click_id: "abc" });
    const row = await waitForStatus(msgId, endpointId, "dead_letter");
    expect(row).toMatchObject({
      attempt_count: 1,
      last_error_kind: "body_rule",
      last_status_code: 200,
    });
    const { rows } = await h.db.pool.query("select last_error from deliveries where id = $1", [
      row.id,
    ]);
    expect(rows[0].last_error).toBe('HTTP 200, but the body contains "duplicate"');
  });

  test("a response echoing the token or a click id is stored masked", async () => {
    const appId = await newApp();
    const path = route((req) => ({ status: 500, body: `bad request ${req.path}` }));
    const endpointId = await newEndpoint(appId, `${rx.url}${path}/{$token}?x={click_id}`, {
      method: "GET",
      urlToken: "very-secret-token",
      maxAttempts: 1,
    });
    const msgId = await send(appId, { click_id: "click-123456" });
    await waitForStatus(msgId, endpointId, "dead_letter");
    const [attempt] = await attemptRows(msgId);
    expect(attempt!.response_body).toBe(`bad request ${path}/***?x=***`);
  });
});

describe("tracker formats from the README", () => {
  test("Keitaro: the postback key (the URL token) in the path, subid, status, payout", async () => {
    const appId = await newApp();
    const path = route(() => ({ status: 200, body: "OK" }));
    const endpointId = await newEndpoint(
      appId,
      `${rx.url}${path}/{$token}/postback?subid={subid}&status={status}&payout={payout}&tid={$message_id}`,
      { method: "GET", urlToken: "a1b2c3", successRule: { bodyContains: ["OK"] } },
    );
    const msgId = await sendRaw(appId, '{"subid":"3kd8a0","status":"sale","payout":12.30}');
    await waitForStatus(msgId, endpointId, "delivered");
    expect(requestsUnder(path).map((r) => r.path)).toEqual([
      `${path}/a1b2c3/postback?subid=3kd8a0&status=sale&payout=12.30&tid=${msgId}`,
    ]);
  });
});
