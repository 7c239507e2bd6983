/**
 * Postback endpoint fields through the management API (README.md, Postbacks): what replies
 * show (the URL token only as ***), what is refused at save time with a 422 that says where
 * (templates that do not parse, unknown built-ins, a host from the payload, {$token}
 * without a token, a GET with a form body), the SSRF guard on a template's host, PATCH and
 * PUT keeping what they should, the OpenAPI document, and the URL token sealed at rest and
 * re-sealed by reencrypt-secrets.
 */
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { reencryptSecrets } from "../src/security/reencrypt.ts";
import { makeSecretBox } from "../src/security/secret-box.ts";
import { type Harness, startHarness } from "./helpers/harness.ts";

const KEY = randomBytes(32).toString("base64");
let h: Harness;
let appId: string;

beforeAll(async () => {
  // sealed at rest, as in production; loopback allowed (the SSRF tests use other hosts)
  h = await startHarness({ encryptionKey: KEY, ssrfAllowlist: ["127.0.0.0/8"] });
  const app = await h.call("POST", "/api/v1/app", { name: "tracker tests" });
  appId = app.body.id;
});
afterAll(() => h?.close());

const base = () => `/api/v1/app/${appId}/endpoint`;
const TEMPLATE = "http://127.0.0.1:9/{$token}/postback?subid={subid}&payout={payout}";

async function create(body: Record<string, unknown>) {
  return h.call("POST", base(), body);
}

describe("replies", () => {
  test("defaults for a plain endpoint; every postback field as set, the token as ***", async () => {
    const plain = await create({ url: "http://127.0.0.1:9/hook" });
    expect(plain.status).toBe(201);
    expect(plain.body).toMatchObject({
      method: "POST",
      bodyFormat: "json",
      urlToken: null,
      missingFields: "fail",
      successRule: null,
    });

    const rule = { bodyContains: ["OK"], bodyNotContains: ["DUPLICATE"], onFailure: "permanent" };
    const res = await create({
      url: TEMPLATE,
      method: "GET",
      urlToken: "tracker-key-123",
      missingFields: "empty",
      successRule: rule,
    });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body).toMatchObject({
      url: TEMPLATE,
      method: "GET",
      urlToken: "***",
      missingFields: "empty",
      successRule: rule,
    });
    const id = res.body.id;
    for (const reply of [
      await h.call("GET", `${base()}/${id}`),
      await h.call("PATCH", `${base()}/${id}`, { description: "x" }),
    ]) {
      expect(reply.body.urlToken).toBe("***");
      expect(JSON.stringify(reply.body)).not.toContain("tracker-key-123");
    }
    const list = await h.call("GET", base());
    expect(JSON.stringify(list.body)).not.toContain("tracker-key-123");

    // sealed at rest like signing secrets
    const { rows } = await h.db.pool.query("select url_token from endpoints where id = $1", [id]);
    expect(rows[0].url_token).toMatch(/^enc:v1:/);
    expect(makeSecretBox(KEY).open(rows[0].url_token)).toBe("tracker-key-123");
  });
});

describe("refused at save time", () => {
  const refusals: Array<[string, Record<string, unknown>, RegExp]> = [
    [
      "an unknown built-in, with its position",
      { url: "http://127.0.0.1:9/pb?a={subid}&b={$clickid}" },
      /unknown built-in \{\$clickid\}.*\(at position 35 of the URL\)/,
    ],
    [
      "a host filled from the payload",
      { url: "http://{host}/pb?a={subid}" },
      /scheme, host and port must be literal.*position 8/,
    ],
    [
      "a port filled from the payload",
      { url: "http://127.0.0.1:{port}/pb" },
      /must be literal.*position 18/,
    ],
    [
      "an unclosed brace",
      { url: "http://127.0.0.1:9/pb?a={subid" },
      /a \{ without its \}.*position 25/,
    ],
    [
      "a stray closing brace",
      { url: "http://127.0.0.1:9/pb?a=}" },
      /a \} without its \{.*position 25/,
    ],
    [
      "a placeholder that is no field name",
      { url: "http://127.0.0.1:9/pb?a={a b}" },
      /not a payload field.*position 25/,
    ],
    [
      "a placeholder in the fragment",
      { url: "http://127.0.0.1:9/pb#{a}" },
      /fragment.*position 23/,
    ],
    [
      "{$token} without a token",
      { url: TEMPLATE },
      /places \{\$token\}, but the endpoint has no urlToken/,
    ],
    [
      "a GET with a form body",
      { url: "http://127.0.0.1:9/pb", method: "GET", bodyFormat: "form" },
      /GET sends no body/,
    ],
    [
      "the mask sent back as the token",
      { url: TEMPLATE, urlToken: "***" },
      /how replies mask the token/,
    ],
    [
      "a success rule with no text",
      { url: "http://127.0.0.1:9/pb", successRule: { onFailure: "retry" } },
      /bodyContains or bodyNotContains/,
    ],
    [
      "a method hookrelay does not send",
      { url: "http://127.0.0.1:9/pb", method: "DELETE" },
      /method/,
    ],
    ["a credentials-bearing template", { url: "http://u:p@127.0.0.1:9/pb?a={x}" }, /credentials/],
  ];
  for (const [what, body, detail] of refusals) {
    test(`422: ${what}`, async () => {
      const res = await create(body);
      expect(res.status, JSON.stringify(res.body)).toBe(422);
      expect(res.body.code).toBe("validation_error");
      expect(res.body.detail).toMatch(detail);
    });
  }

  test("the SSRF guard checks a template's literal host (url_not_allowed)", async () => {
    for (const url of [
      "http://10.0.0.7/postback?cid={click_id}",
      "http://169.254.169.254/{path}?x={$token}",
      "http://[::ffff:192.168.1.1]:8080/pb/{subid}",
      "http://localhost./pb?cid={click_id}",
    ]) {
      const res = await create({ url, urlToken: "t0k3n" });
      expect(res.status, url).toBe(422);
      expect(res.body.code, url).toBe("url_not_allowed");
    }
    // and on PATCH
    const ok = await create({ url: "http://127.0.0.1:9/pb?cid={click_id}" });
    const patched = await h.call("PATCH", `${base()}/${ok.body.id}`, {
      url: "http://10.1.2.3/pb?cid={click_id}",
    });
    expect(patched.body.code).toBe("url_not_allowed");
  });

  test("an invalid change by PATCH is checked against what the endpoint keeps", async () => {
    const ep = await create({ url: "http://127.0.0.1:9/pb", bodyFormat: "form" });
    const toGet = await h.call("PATCH", `${base()}/${ep.body.id}`, { method: "GET" });
    expect(toGet.status).toBe(422);
    const withToken = await create({ url: TEMPLATE, urlToken: "k" });
    const dropToken = await h.call("PATCH", `${base()}/${withToken.body.id}`, { urlToken: null });
    expect(dropToken.status).toBe(422);
    expect(dropToken.body.detail).toMatch(/no urlToken/);
  });
});

describe("PATCH and PUT", () => {
  test("PATCH changes only what it names; a PUT that leaves the postback fields out keeps them, like the token and the signing secret", async () => {
    const ep = await create({
      url: TEMPLATE,
      method: "GET",
      urlToken: "keep-me",
      missingFields: "empty",
    });
    const id = ep.body.id;
    const patched = await h.call("PATCH", `${base()}/${id}`, {
      successRule: { bodyContains: ["OK"] },
    });
    expect(patched.body).toMatchObject({
      method: "GET",
      missingFields: "empty",
      urlToken: "***",
      successRule: { bodyContains: ["OK"] },
    });

    // (the svix client's endpoint.update is such a PUT: it cannot send these fields, and a GET
    // postback turned into a POST would lose every conversion)
    const put = await h.call("PUT", `${base()}/${id}`, { url: TEMPLATE, description: "put" });
    expect(put.status, JSON.stringify(put.body)).toBe(200);
    expect(put.body).toMatchObject({
      description: "put",
      method: "GET",
      bodyFormat: "json",
      missingFields: "empty",
      successRule: { bodyContains: ["OK"] },
      urlToken: "***",
    });
    // named, they are replaced
    const named = await h.call("PUT", `${base()}/${id}`, {
      url: TEMPLATE,
      method: "POST",
      missingFields: "fail",
      successRule: null,
    });
    expect(named.body).toMatchObject({ method: "POST", missingFields: "fail", successRule: null });

    const replaced = await h.call("PUT", `${base()}/${id}`, { url: TEMPLATE, urlToken: "new-one" });
    expect(replaced.body.urlToken).toBe("***");
    const { rows } = await h.db.pool.query("select url_token from endpoints where id = $1", [id]);
    expect(makeSecretBox(KEY).open(rows[0].url_token)).toBe("new-one");

    const cleared = await h.call("PATCH", `${base()}/${id}`, {
      url: "http://127.0.0.1:9/plain",
      urlToken: null,
    });
    expect(cleared.body.urlToken).toBeNull();
  });
});

test("the OpenAPI document describes the postback fields", async () => {
  const doc = await h.api.inject({ method: "GET", url: "/docs/json" });
  const text = doc.body;
  for (const field of ["bodyFormat", "urlToken", "missingFields", "successRule", "bodyNotContains"])
    expect(text).toContain(`"${field}"`);
  expect(text).toContain('"enum":["POST","GET","PUT"]');
});

test("reencrypt-secrets re-seals URL tokens under the new key", async () => {
  const ep = await create({ url: TEMPLATE, urlToken: "rotate-me" });
  const newKey = randomBytes(32).toString("base64");
  const box = makeSecretBox(newKey, [KEY]);
  const result = await reencryptSecrets(h.db.pool, box);
  expect(result.done).toBe(true);
  const { rows } = await h.db.pool.query("select url_token from endpoints where id = $1", [
    ep.body.id,
  ]);
  expect(box.needsReseal(rows[0].url_token)).toBe(false);
  expect(makeSecretBox(newKey).open(rows[0].url_token)).toBe("rotate-me");
  // every token was re-sealed: none is left under the old key
  const { rows: old } = await h.db.pool.query(
    "select url_token from endpoints where url_token is not null",
  );
  expect(old.every((r) => !box.needsReseal(r.url_token))).toBe(true);
});
