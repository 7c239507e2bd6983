/**
 * Custom endpoint headers (README.md, Endpoints; docs/delivery.md, Custom headers): headers
 * the sender controls or that would break the request are refused with a 422 naming the
 * header, on every route that saves them; a custom User-Agent replaces hookrelay's (one
 * line on the wire); a row saved before the rule, holding such a header, is still
 * delivered, without it.
 *
 * Real PostgreSQL (one cloned database); the API through inject(); deliveries to a bare
 * HTTP server on 127.0.0.1 that keeps each request's raw header lines.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type Harness, startHarness } from "./helpers/harness.ts";
import { waitFor } from "./helpers/receiver.ts";
import { expectRefusal, REFUSAL } from "./helpers/refusals.ts";

const V1 = "/api/v1";

/** Every request's path and raw header lines, as [name, value] pairs in wire order. */
const seen: { path: string; raw: [string, string][] }[] = [];
let server: http.Server;
let base = "";
let h: Harness;
let appId = "";
let endpointId = "";

beforeAll(async () => {
  server = http.createServer((req, res) => {
    const raw: [string, string][] = [];
    for (let i = 0; i < req.rawHeaders.length; i += 2)
      raw.push([req.rawHeaders[i]!, req.rawHeaders[i + 1]!]);
    req.resume();
    req.on("end", () => {
      seen.push({ path: req.url ?? "", raw });
      res.end("ok");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  h = await startHarness();
  appId = (await h.call("POST", `${V1}/app`, { name: "headers" })).body.id;
  const ep = await h.call("POST", `${V1}/app/${appId}/endpoint`, { url: `${base}/base` });
  expect(ep.status).toBe(201);
  endpointId = ep.body.id;
});
afterAll(async () => {
  await h?.close();
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
});

const REFUSED_NAMES = [
  "Expect",
  "Connection",
  "Keep-Alive",
  "TE",
  "Trailer",
  "Upgrade",
  "Host",
  "Content-Length",
  "Transfer-Encoding",
  "Content-Type",
  "webhook-id",
  "webhook-timestamp",
  "webhook-signature",
  "Webhook-Anything",
  "Proxy-Authorization",
  "Proxy-Connection",
  "proxy-whatever",
];

/** A name in three spellings: as listed, all lower and all upper case. */
const spellings = (name: string) => [name, name.toLowerCase(), name.toUpperCase()];

describe("refused when saved", () => {
  test("every header the sender controls, in any case, on create, PUT and PATCH: 422 naming it", async () => {
    const failures: string[] = [];
    for (const name of REFUSED_NAMES.flatMap(spellings)) {
      const headers = { "X-Fine": "1", [name]: "100-continue" };
      const answers = [
        await h.call("POST", `${V1}/app/${appId}/endpoint`, { url: `${base}/x`, headers }),
        await h.call("PUT", `${V1}/app/${appId}/endpoint/${endpointId}`, {
          url: `${base}/x`,
          headers,
        }),
        await h.call("PATCH", `${V1}/app/${appId}/endpoint/${endpointId}`, { headers }),
      ];
      for (const res of answers) {
        const ok =
          res.status === REFUSAL.fieldRule.status &&
          res.body?.code === REFUSAL.fieldRule.code &&
          typeof res.body.detail === "string" &&
          res.body.detail.includes(`"${name}"`);
        if (!ok) failures.push(`${name} → ${res.status} ${JSON.stringify(res.body)}`);
      }
    }
    expect(failures).toEqual([]);
    // nothing was saved
    const saved = await h.call("GET", `${V1}/app/${appId}/endpoint/${endpointId}`);
    expect(saved.body.url).toBe(`${base}/base`);
    expect(saved.body.headers ?? {}).toEqual({});
  });

  test("names that are not RFC 9110 tokens, values with CR, LF, NUL or above U+00FF, and a name given twice: 422 naming it", async () => {
    const cases: [Record<string, string>, RegExp][] = [
      [{ "X Space": "v" }, /"X Space" is not a valid header name/],
      [{ "X-Colon:": "v" }, /"X-Colon:" is not a valid header name/],
      [{ "": "v" }, /"" is not a valid header name/],
      [{ "X-Ünicode": "v" }, /"X-Ünicode" is not a valid header name/],
      [{ "X-A": "a\r\nX-Injected: 1" }, /"X-A" has a value with a character HTTP does not allow/],
      [{ "X-A": "a\nb" }, /"X-A" has a value/],
      [{ "X-A": "snow \u2603" }, /"X-A" has a value/],
      [{ "X-A": "1", "x-a": "2" }, /"X-A" and "x-a" are the same header/],
      [{ "User-Agent": "a", "user-agent": "b" }, /same header/],
    ];
    for (const [headers, detail] of cases) {
      const res = await h.call("POST", `${V1}/app/${appId}/endpoint`, {
        url: `${base}/x`,
        headers,
      });
      expectRefusal(res, REFUSAL.fieldRule, JSON.stringify(headers));
      expect(res.body.detail).toMatch(detail);
    }
    // NUL, which PostgreSQL text cannot hold, is refused before, as anywhere outside a payload
    const nul = await h.call("POST", `${V1}/app/${appId}/endpoint`, {
      url: `${base}/x`,
      headers: { "X-A": "a\u0000b" },
    });
    expectRefusal(nul, REFUSAL.badRequest);
  });

  test("ordinary headers are taken: User-Agent, Authorization, tab and obs-text in values", async () => {
    const headers = {
      "User-Agent": "acme-relay/2",
      Authorization: "Basic dXNlcjpwYXNz",
      "X-Tabbed": "a\tb",
      "X-Latin": "caf\u00e9",
    };
    const res = await h.call("POST", `${V1}/app/${appId}/endpoint`, { url: `${base}/x`, headers });
    expect(res.status).toBe(201);
    const { rows } = await h.db.pool.query("select headers from endpoints where id = $1", [
      res.body.id,
    ]);
    expect(rows[0].headers).toEqual(headers);
  });
});

describe("on the wire", () => {
  const deliverTo = async (
    path: string,
    headers: Record<string, string> | null,
    viaSql = false,
  ) => {
    const ep = await h.call("POST", `${V1}/app/${appId}/endpoint`, {
      url: `${base}${path}`,
      headers: viaSql ? {} : headers,
    });
    expect(ep.status).toBe(201);
    // a row saved before the API refused these headers
    if (viaSql)
      await h.db.pool.query("update endpoints set headers = $1 where url = $2", [
        headers,
        `${base}${path}`,
      ]);
    const msg = await h.call("POST", `${V1}/app/${appId}/msg`, {
      eventType: "t",
      payload: { path },
    });
    expect(msg.status).toBe(202);
    const worker = h.startWorker();
    try {
      await waitFor(() => seen.some((r) => r.path === path), 10_000, `delivery to ${path}`);
    } finally {
      await worker.stop();
    }
    return seen.find((r) => r.path === path)!.raw;
  };
  const lines = (raw: [string, string][], name: string) =>
    raw.filter(([n]) => n.toLowerCase() === name.toLowerCase());

  test("a custom User-Agent replaces hookrelay's: exactly one User-Agent line", async () => {
    const raw = await deliverTo("/agent", { "User-Agent": "acme-relay/2" });
    expect(lines(raw, "user-agent").map(([, v]) => v)).toEqual(["acme-relay/2"]);
  });

  test("without one, hookrelay's own User-Agent, once", async () => {
    const raw = await deliverTo("/plain", { "X-Partner": "acme" });
    const agents = lines(raw, "user-agent");
    expect(agents).toHaveLength(1);
    expect(agents[0]![1]).toMatch(/^hookrelay\//);
  });

  test("a row saved before the rule with Expect, Connection and a webhook-* header is still delivered, without them", async () => {
    const raw = await deliverTo(
      "/legacy",
      {
        Expect: "100-continue",
        Connection: "close",
        "Webhook-Id": "forged",
        "Proxy-Authorization": "Basic x",
        "X-Kept": "yes",
      },
      true,
    );
    expect(lines(raw, "expect")).toEqual([]);
    expect(lines(raw, "proxy-authorization")).toEqual([]);
    expect(lines(raw, "webhook-id").map(([, v]) => v)).not.toContain("forged");
    expect(lines(raw, "webhook-id")).toHaveLength(1);
    expect(lines(raw, "x-kept").map(([, v]) => v)).toEqual(["yes"]);
  });
});
