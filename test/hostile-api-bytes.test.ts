/**
 * Bytes in, bytes out (docs/security.md, Input; docs/errors.md): a JSON body that is not
 * UTF-8 is a 400 invalid_json saying at which byte offset, never stored with U+FFFD in
 * place of the bad bytes (and so signed and sent as bytes the producer never sent); the
 * same for the dashboard's and the portal's form posts (a 400 page). Lone surrogate escapes
 * are kept as written inside a message payload and refused outside it. An empty JSON body
 * is a 400 empty_body on every route that takes a body.
 *
 * Real PostgreSQL (one cloned database); the API, dashboard and portal through inject().
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { dashboardClient } from "./helpers/dashboard-client.ts";
import { type Fixtures, realPath, seedFixtures } from "./helpers/fuzz-fixtures.ts";
import { type Harness, startHarness } from "./helpers/harness.ts";
import { openPortal } from "./helpers/portal-client.ts";
import { expectRefusal, REFUSAL } from "./helpers/refusals.ts";
import { discoverRoutes } from "./helpers/routes.ts";

const V1 = "/api/v1";

let h: Harness;
let fx: Fixtures;

beforeAll(async () => {
  h = await startHarness();
  await h.api.ready();
  fx = await seedFixtures(h);
});
afterAll(async () => {
  await h?.close();
});

/** A request whose body is exactly `bytes`, with the admin key. */
const sendBytes = (method: "POST" | "PUT" | "PATCH", url: string, bytes: Buffer, type = "json") =>
  h.api.inject({
    method,
    url,
    headers: {
      authorization: `Bearer ${h.adminKey}`,
      "content-type": type === "json" ? "application/json" : type,
    },
    payload: bytes,
  });

const messageCount = async () =>
  (await h.db.pool.query("select count(*)::int as n from messages")).rows[0].n as number;

/** `before`, the bad bytes, then `after`, as one buffer; the bad bytes start at before's length. */
const spliced = (before: string, bad: number[], after: string) =>
  Buffer.concat([Buffer.from(before), Buffer.from(bad), Buffer.from(after)]);

describe("invalid UTF-8 in a JSON body", () => {
  // each a sequence a lenient decoder turns into U+FFFD
  const BAD: [string, number[]][] = [
    ["a byte that starts nothing", [0xff]],
    ["a lone continuation byte", [0x80]],
    ["an overlong '/'", [0xc0, 0xaf]],
    ["an overlong 3-byte form", [0xe0, 0x80, 0xaf]],
    ["an encoded surrogate (CESU-8)", [0xed, 0xa0, 0x80]],
    ["past U+10FFFF", [0xf4, 0x90, 0x80, 0x80]],
    ["a 2-byte lead without its continuation", [0xc3, 0x41]],
    ["Latin-1 é", [0xe9]],
  ];

  test("in a message payload: 400 invalid_json naming the byte offset, nothing stored", async () => {
    const before = await messageCount();
    const head = `{"eventType":"bytes","payload":{"name":"caf`;
    for (const [what, bad] of BAD) {
      const res = await sendBytes("POST", `${V1}/app/${fx.appId}/msg`, spliced(head, bad, `"}}`));
      expectRefusal(res, REFUSAL.invalidJson, what);
      expect(JSON.parse(res.body).detail, what).toContain(`byte offset ${head.length}`);
    }
    expect(await messageCount()).toBe(before);
  });

  test("cut off at the very end of the body, and in fields of every kind of resource", async () => {
    const cut = await sendBytes(
      "POST",
      `${V1}/app/${fx.appId}/msg`,
      spliced(`{"eventType":"bytes","payload":{}} `, [0xe2, 0x82], ""),
    );
    expectRefusal(cut, REFUSAL.invalidJson);
    for (const [method, url, head] of [
      ["POST", `${V1}/app`, '{"name":"'],
      ["PATCH", `${V1}/app/${fx.appId}`, '{"name":"'],
      ["POST", `${V1}/app/${fx.appId}/endpoint`, '{"url":"http://127.0.0.1:9/","description":"'],
      ["PATCH", `${V1}/app/${fx.appId}/endpoint/${fx.endpointId}`, '{"description":"'],
      ["PUT", `${V1}/event-type/${fx.eventType}`, '{"description":"'],
    ] as const) {
      const res = await sendBytes(method, url, spliced(head, [0xff, 0xfe], '"}'));
      expectRefusal(res, REFUSAL.invalidJson, `${method} ${url}`);
      expect(JSON.parse(res.body).detail).toContain(`byte offset ${head.length}`);
    }
  });

  test("well-formed multi-byte UTF-8 (2, 3 and 4 bytes, U+FFFD itself) is stored byte for byte", async () => {
    const payload = '{"s":"café ✓ 😀 \ufffd","k":"\u00e9"}';
    const res = await sendBytes(
      "POST",
      `${V1}/app/${fx.appId}/msg`,
      Buffer.from(`{"eventType":"bytes","payload":${payload}}`),
    );
    expect(res.statusCode).toBe(202);
    const { rows } = await h.db.pool.query("select payload from messages where id = $1", [
      JSON.parse(res.body).id,
    ]);
    expect(Buffer.from(rows[0].payload)).toEqual(Buffer.from(payload));
  });
});

describe("lone surrogate escapes", () => {
  test("inside a payload: kept as written (ASCII escapes, the bytes signed are the bytes sent); outside it: 400", async () => {
    const payload = '{"hi":"\\ud800","lo":"x\\udfffy","nul":"\\u0000"}';
    const ok = await h.call("POST", `${V1}/app/${fx.appId}/msg`, {
      eventType: "bytes",
      payload: JSON.parse(payload),
    });
    expect(ok.status).toBe(202);
    const raw = await h.call(
      "POST",
      `${V1}/app/${fx.appId}/msg`,
      `{"eventType":"bytes","payload":${payload}}`,
    );
    expect(raw.status).toBe(202);
    const { rows } = await h.db.pool.query("select payload from messages where id = $1", [
      raw.body.id,
    ]);
    expect(rows[0].payload).toBe(payload);
    for (const body of [
      '{"eventType":"bytes","payload":{},"tags":["\\ud800"]}',
      '{"eventType":"bytes","payload":{},"channels":["a\\udc00"]}',
      '{"eventType":"bytes\\ud800","payload":{}}',
    ]) {
      expectRefusal(await h.call("POST", `${V1}/app/${fx.appId}/msg`, body), REFUSAL.badRequest);
    }
  });
});

describe("an empty JSON body", () => {
  const EMPTY_BODY = { status: 400, code: "empty_body" } as const;

  test("is 400 empty_body (as docs/errors.md says) on every route that takes a body; whitespace too", async () => {
    const failures: string[] = [];
    let refused = 0;
    for (const r of discoverRoutes(h.api)) {
      if (!["POST", "PUT", "PATCH"].includes(r.method) || !r.path.startsWith(V1)) continue;
      const url = realPath(fx, r.path);
      // does the route take a body? without one it says what the body must be
      const bare = await h.api.inject({
        method: r.method as "POST",
        url,
        headers: { authorization: `Bearer ${h.adminKey}` },
      });
      const takesBody = bare.statusCode === 422 && /^body\b/.test(JSON.parse(bare.body).detail);
      for (const payload of ["", "  \r\n\t"]) {
        const res = await h.call(r.method, url, payload);
        const line = `${r.method} ${r.path} ${JSON.stringify(payload)} → ${res.status} ${JSON.stringify(res.body)}`;
        if (takesBody) {
          refused++;
          if (res.status !== EMPTY_BODY.status || res.body?.code !== EMPTY_BODY.code)
            failures.push(line);
        } else if (res.body?.code === "empty_body" || res.status >= 500) {
          // a route that takes no body (or an optional one) answers as it would without one
          failures.push(line);
        }
      }
    }
    expect(failures).toEqual([]);
    expect(refused).toBeGreaterThan(20);
  });

  test("a route whose body is optional still takes none: secret rotation with an empty JSON body", async () => {
    const res = await h.call(
      "POST",
      `${V1}/app/${fx.appId}/endpoint/${fx.endpointId}/secret/rotate`,
      "",
    );
    expect(res.status).toBeLessThan(300);
  });
});

describe("form posts of the dashboard and the portal", () => {
  /** A form post whose body is exactly `bytes` (the CSRF token first). */
  const postForm = (url: string, cookie: string, csrf: string, bytes: Buffer) =>
    h.api.inject({
      method: "POST",
      url,
      headers: { cookie, "content-type": "application/x-www-form-urlencoded" },
      payload: Buffer.concat([Buffer.from(`_csrf=${encodeURIComponent(csrf)}&`), bytes]),
    });
  const description = async () =>
    (await h.db.pool.query("select description from endpoints where id = $1", [fx.endpointId]))
      .rows[0].description as string;

  test("invalid UTF-8, raw or %-escaped, is a 400, never saved as U+FFFD", async () => {
    const dash = dashboardClient(h.api);
    await dash.signIn(h.adminKey);
    const page = await dash.get(`/dashboard/endpoints/${fx.endpointId}/edit`);
    expect(page.statusCode).toBe(200);
    const cookie = [...dash.cookies].map(([k, v]) => `${k}=${v}`).join("; ");
    const before = await description();
    const url = `/dashboard/endpoints/${fx.endpointId}/edit`;
    const fields = `url=${encodeURIComponent("http://127.0.0.1:9/fuzz")}&description=`;
    for (const bad of [Buffer.from([0xff, 0xfe]), Buffer.from("%FF%FE"), Buffer.from("%C3%28")]) {
      const res = await postForm(
        url,
        cookie,
        dash.csrf!,
        Buffer.concat([Buffer.from(fields), bad]),
      );
      expect(res.statusCode, bad.toString("latin1")).toBe(400);
      expect(res.body).toMatch(/not valid UTF-8/);
    }
    expect(await description()).toBe(before);
    // well-formed, %-escaped or raw: saved as sent
    const good = await postForm(url, cookie, dash.csrf!, Buffer.from(`${fields}caf%C3%A9 ${"✓"}`));
    expect(good.statusCode).toBe(303);
    expect(await description()).toBe("café ✓");
  });

  test("the portal's endpoint form refuses them the same way", async () => {
    const link = await h.call("POST", `${V1}/auth/app-portal-access/${fx.appId}`, {});
    const portal = await openPortal(h.api, link.body.token);
    const cookie = [...portal.cookies].map(([k, v]) => `${k}=${v}`).join("; ");
    const endpoints = async () =>
      (await h.db.pool.query("select count(*)::int as n from endpoints")).rows[0].n as number;
    const before = await endpoints();
    const res = await postForm(
      "/portal/endpoints",
      cookie,
      portal.csrf!,
      Buffer.concat([
        Buffer.from(`url=${encodeURIComponent("http://127.0.0.1:9/p")}&description=`),
        Buffer.from([0xc0, 0xaf]),
      ]),
    );
    expect(res.statusCode).toBe(400);
    expect(res.body).toMatch(/not valid UTF-8/);
    expect(await endpoints()).toBe(before);
  });
});
