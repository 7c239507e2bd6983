/**
 * Bad input to the management API: malformed JSON, unknown, missing and wrongly typed
 * fields, bad endpoint URLs and payloads, an over-large body, unknown ids, bad iterators
 * and limits, missing or wrong authentication, prototype-pollution keys, bodies that are
 * not JSON, NUL characters and CR/LF in header values: always a 4xx with
 * `{ code, detail }` naming the problem, never a 5xx.
 *
 * The management API through app.inject, on a real PostgreSQL (one cloned database for this
 * file). Deliveries go to one real HTTP receiver on 127.0.0.1; the tests that need them
 * start a worker and stop it again when done.
 *
 * Tests named "regression ..." pin defects found in review and fixed.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { apiCalls, expectClientError, V1 } from "./helpers/api-calls.ts";
import { type Harness, startHarness } from "./helpers/harness.ts";
import { type Receiver, startReceiver } from "./helpers/receiver.ts";

let h: Harness;
let rx: Receiver;

beforeAll(async () => {
  // The allow-list keeps 127.0.0.1 endpoints valid once an SSRF guard checks URLs on save.
  h = await startHarness({ ssrfAllowlist: ["127.0.0.0/8"] });
  rx = await startReceiver();
});
afterAll(async () => {
  await h?.close();
  await rx?.close();
});

const { raw, createApp, createEndpoint } = apiCalls(() => ({ h, rx }));

describe("bad input: a 4xx with { code, detail }, never a 5xx", () => {
  let appId: string;
  let epId: string;
  beforeAll(async () => {
    const app = await createApp();
    appId = app.id;
    epId = (await createEndpoint(appId)).id;
  });

  test("malformed JSON", async () => {
    const res = await raw("POST", `${V1}/app`, '{"name": "x",');
    expect(res.statusCode).toBe(400);
    const body = res.json();
    expect(body.code).toBe("invalid_json");
    expect(body.detail).toMatch(/JSON/);
    const msg = await raw("POST", `${V1}/app/${appId}/msg`, '{"eventType":"t","payload":{"a":}}');
    expect(msg.statusCode).toBe(400);
    expect(msg.json().detail).toMatch(/JSON/);
  });

  test("unknown fields are named", async () => {
    expectClientError(await h.call("POST", `${V1}/app`, { name: "x", colour: "red" }), /colour/);
    expectClientError(await h.call("PATCH", `${V1}/app/${appId}`, { nmae: "x" }), /nmae/);
    expectClientError(
      await h.call("POST", `${V1}/app/${appId}/endpoint`, {
        url: `${rx.url}/u`,
        filterTyps: ["a"],
      }),
      /filterTyps/,
    );
    expectClientError(
      await h.call("PATCH", `${V1}/app/${appId}/endpoint/${epId}`, { secretKey: "x" }),
      /secretKey/,
    );
    expectClientError(
      await h.call("POST", `${V1}/app/${appId}/msg`, { eventType: "t", payload: {}, evenId: "x" }),
      /evenId/,
    );
  });

  test("missing required fields are named", async () => {
    expectClientError(await h.call("POST", `${V1}/app`, {}), /name/);
    expectClientError(
      await h.call("POST", `${V1}/app/${appId}/endpoint`, { description: "x" }),
      /url/,
    );
    expectClientError(await h.call("POST", `${V1}/app/${appId}/msg`, { payload: {} }), /eventType/);
    expectClientError(
      await h.call("POST", `${V1}/app/${appId}/msg`, { eventType: "t" }),
      /payload/,
    );
    expectClientError(await h.call("POST", `${V1}/app`, ""), /body/);
  });

  test("wrong types are named and not coerced", async () => {
    expectClientError(await h.call("POST", `${V1}/app`, { name: 5 }), /name/);
    expectClientError(
      await h.call("POST", `${V1}/app`, { name: "x", metadata: { a: 1 } }),
      /metadata/,
    );
    expectClientError(
      await h.call("POST", `${V1}/app/${appId}/endpoint`, { url: `${rx.url}/u`, eventTypes: "a" }),
      /eventTypes/,
    );
    expectClientError(
      await h.call("POST", `${V1}/app/${appId}/endpoint`, { url: `${rx.url}/u`, maxAttempts: "5" }),
      /maxAttempts/,
    );
    expectClientError(
      await h.call("POST", `${V1}/app/${appId}/endpoint`, { url: `${rx.url}/u`, disabled: "true" }),
      /disabled/,
    );
    expectClientError(
      await h.call("POST", `${V1}/app/${appId}/endpoint`, { url: `${rx.url}/u`, timeoutMs: 1 }),
      /timeoutMs/,
    );
    expectClientError(
      await h.call("POST", `${V1}/app/${appId}/msg`, { eventType: 1, payload: {} }),
      /eventType/,
    );
    expectClientError(
      await h.call("POST", `${V1}/app/${appId}/msg`, {
        eventType: "t",
        payload: {},
        channels: "c",
      }),
      /channels/,
    );
    expectClientError(await h.call("POST", `${V1}/app`, [{ name: "x" }]), /body/);
  });

  test("bad endpoint URLs", async () => {
    for (const url of [
      "not a url",
      "ftp://x",
      "javascript:alert(1)",
      "file:///etc/passwd",
      "http://",
      "",
    ]) {
      expectClientError(await h.call("POST", `${V1}/app/${appId}/endpoint`, { url }), /url/);
    }
    expectClientError(
      await h.call("PATCH", `${V1}/app/${appId}/endpoint/${epId}`, { url: "ftp://x" }),
      /url/,
    );
    expectClientError(
      await h.call("PUT", `${V1}/app/${appId}/endpoint/${epId}`, { url: "not a url" }),
      /url/,
    );
  });

  test("a payload that is not an object", async () => {
    expectClientError(
      await h.call("POST", `${V1}/app/${appId}/msg`, { eventType: "t", payload: [1, 2] }),
      /payload/,
    );
    expectClientError(
      await h.call("POST", `${V1}/app/${appId}/msg`, { eventType: "t", payload: "text" }),
      /payload/,
    );
    expectClientError(
      await h.call("POST", `${V1}/app/${appId}/msg`, { eventType: "t", payload: null }),
      /payload/,
    );
  });

  test("a body over 1 MiB is 413", async () => {
    const big = JSON.stringify({ eventType: "t", payload: { s: "x".repeat(1024 * 1024 + 10) } });
    const res = await raw("POST", `${V1}/app/${appId}/msg`, big);
    expect(res.statusCode).toBe(413);
    expect(res.json()).toEqual({ code: "payload_too_large", detail: expect.any(String) });
    const { rows } = await h.db.pool.query(
      "select count(*)::int as n from messages where app_id = $1",
      [appId],
    );
    expect(rows[0].n).toBe(0);
    // Just under the limit is fine.
    const ok = await raw(
      "POST",
      `${V1}/app/${appId}/msg`,
      JSON.stringify({ eventType: "t", payload: { s: "x".repeat(1000 * 1000) } }),
    );
    expect(ok.statusCode).toBe(202);
  });

  test("unknown app, endpoint and message ids are 404", async () => {
    expectClientError(await h.call("GET", `${V1}/app/app_doesnotexist`), /application/, 404);
    expectClientError(
      await h.call("PATCH", `${V1}/app/app_doesnotexist`, { name: "x" }),
      /application/,
      404,
    );
    expectClientError(
      await h.call("POST", `${V1}/app/app_doesnotexist/msg`, { eventType: "t", payload: {} }),
      /application/,
      404,
    );
    expectClientError(
      await h.call("GET", `${V1}/app/${appId}/endpoint/ep_doesnotexist`),
      /endpoint/,
      404,
    );
    expectClientError(
      await h.call("GET", `${V1}/app/${appId}/msg/msg_doesnotexist`),
      /message/,
      404,
    );
    expectClientError(
      await h.call("GET", `${V1}/app/${appId}/attempt/msg/msg_doesnotexist`),
      /message/,
      404,
    );
    expectClientError(
      await h.call("GET", `${V1}/app/${appId}/attempt/endpoint/ep_doesnotexist`),
      /endpoint/,
      404,
    );
    expectClientError(await h.call("GET", `${V1}/nothing-here`), /route/, 404);
  });

  test("bad iterators and limits", async () => {
    expectClientError(await h.call("GET", `${V1}/app?iterator=-`), /iterator/);
    expectClientError(await h.call("GET", `${V1}/app?iterator=${"x".repeat(200)}`), /iterator/);
    expectClientError(
      await h.call("GET", `${V1}/app/${appId}/attempt/endpoint/${epId}?iterator=atmpt_abc`),
      /iterator/,
    );
    for (const limit of ["0", "1000", "-1", "abc", "2.5"]) {
      expectClientError(await h.call("GET", `${V1}/app?limit=${limit}`), /limit/);
      expectClientError(await h.call("GET", `${V1}/app/${appId}/msg?limit=${limit}`), /limit/);
    }
    expectClientError(await h.call("GET", `${V1}/app?order=sideways`), /order/);
    expectClientError(await h.call("GET", `${V1}/app/${appId}/msg?before=yesterday`), /before/);
  });

  test("authentication: missing, wrong key and Basic scheme are 401", async () => {
    for (const authorization of [
      undefined,
      "Bearer wrong-key",
      "Basic x",
      `Basic ${h.adminKey}`,
      "Bearer",
      h.adminKey,
    ]) {
      const res = await h.api.inject({
        method: "GET",
        url: `${V1}/app`,
        headers: authorization === undefined ? {} : { authorization },
      });
      expect(res.statusCode, `authorization: ${authorization}`).toBe(401);
      expect(res.json()).toEqual({ code: "unauthorized", detail: expect.stringMatching(/Bearer/) });
    }
    const post = await h.api.inject({
      method: "POST",
      url: `${V1}/app/${appId}/msg`,
      headers: { "content-type": "application/json" },
      payload: JSON.stringify({ eventType: "t", payload: {} }),
    });
    expect(post.statusCode).toBe(401);
  });

  test("prototype-pollution bodies are refused", async () => {
    const res = await raw("POST", `${V1}/app`, '{"name":"x","__proto__":{"isAdmin":true}}');
    expectClientError({ status: res.statusCode, body: res.json(), headers: {} }, /prototype/);
    const ctor = await raw("POST", `${V1}/app`, '{"name":"x","constructor":{"prototype":{"x":1}}}');
    expectClientError({ status: ctor.statusCode, body: ctor.json(), headers: {} }, /prototype/);
    expect(({} as Record<string, unknown>).isAdmin).toBeUndefined();
  });

  test("a body that is not JSON is refused with a 4xx JSON error", async () => {
    const res = await raw("POST", `${V1}/app`, '{"name":"x"}', { "content-type": "text/plain" });
    expectClientError({ status: res.statusCode, body: res.json(), headers: {} }, /./);
    const form = await raw("POST", `${V1}/app`, "name=x", {
      "content-type": "application/x-www-form-urlencoded",
    });
    expect(form.statusCode).toBe(415);
    expect(form.json()).toEqual({ code: "unsupported_media_type", detail: expect.any(String) });
  });

  test("regression text/plain: a text/plain body is 415, not parsed and validated", async () => {
    const res = await raw("POST", `${V1}/app`, '{"name":"x"}', { "content-type": "text/plain" });
    expect(res.statusCode).toBe(415);
  });

  test("regression iterator: an iterator that is no id of the listing is a 4xx", async () => {
    const res = await h.call("GET", `${V1}/app?iterator=not-an-id`);
    expect(res.status).toBeGreaterThanOrEqual(400);
    expect(res.status).toBeLessThan(500);
  });

  test("regression nul: NUL characters in strings are a 4xx, not a 500", async () => {
    const res = await h.call("POST", `${V1}/app`, { name: "a\u0000b" });
    expect(res.status).toBeLessThan(500);
  });

  test("regression nul: a NUL in a path or query parameter is a 4xx, not a 500", async () => {
    const res = await h.call("GET", `${V1}/app/a%00b`);
    expect(res.status).toBeLessThan(500);
  });

  test("regression header-value: a custom header value with CR/LF is refused when saved", async () => {
    const res = await h.call("POST", `${V1}/app/${appId}/endpoint`, {
      url: `${rx.url}/crlf`,
      headers: { "X-Injected": "a\r\nX-Evil: 1" },
    });
    expect(res.status).toBeGreaterThanOrEqual(400);
  });

  test("regression framework-errors: router errors (bad %-encoding) answer { code, detail }", async () => {
    const res = await h.call("GET", `${V1}/app/%E0%A4%A`);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ code: expect.any(String), detail: expect.any(String) });
  });
  test("regression unique-proto: a list holding __proto__ twice is refused, not stored", async () => {
    const res = await h.call("PATCH", `${V1}/app/${appId}/endpoint/${epId}`, {
      channels: ["__proto__", "__proto__"],
    });
    expect(res.status).toBe(422);
    expect(res.body).toMatchObject({
      code: "validation_error",
      detail: expect.stringMatching(/channels/),
    });
    const ep = await h.call("GET", `${V1}/app/${appId}/endpoint/${epId}`);
    expect(ep.body.channels ?? null).toBeNull();
  });
});
