/**
 * Broker destinations through the management API (docs/destinations.md), without a
 * broker: which URLs are taken and which are a 422 saying why, the password sealed at rest,
 * masked in answers and kept by a `***` sent back, the postback fields refused, the SSRF
 * guard on the broker's host, the OpenAPI document, and re-encryption of the password.
 */
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, expect, test } from "vitest";
import { reencryptSecrets } from "../src/security/reencrypt.ts";
import { makeSecretBox } from "../src/security/secret-box.ts";
import { type Harness, startHarness } from "./helpers/harness.ts";

const KEY = randomBytes(32).toString("base64");
let h: Harness;
let appId: string;

beforeAll(async () => {
  h = await startHarness({ encryptionKey: KEY });
  const app = await h.call("POST", "/api/v1/app", { name: "broker api tests" });
  appId = app.body.id;
});
afterAll(() => h?.close());

const create = (body: Record<string, unknown>) =>
  h.call("POST", `/api/v1/app/${appId}/endpoint`, body);

test("amqp, amqps and nats URLs are destinations of their kind, the password masked", async () => {
  const cases = [
    ["amqp://u:pw-1@127.0.0.1:5672/%2Fhooks?exchange=ex&routingKey=rk", "amqp"],
    ["amqps://u:pw-2@127.0.0.1/", "amqp"],
    ["nats://u:pw-3@127.0.0.1:4222?subject=a.b&stream=S", "nats"],
    ["nats://127.0.0.1:4222", "nats"],
    ["http://127.0.0.1:9/hook", "http"],
  ] as const;
  for (const [url, kind] of cases) {
    const res = await create({ url });
    expect(res.status, `${url}: ${JSON.stringify(res.body)}`).toBe(201);
    expect(res.body.destinationKind).toBe(kind);
    expect(res.body.url).not.toMatch(/pw-\d/);
    if (url.includes("pw-")) expect(res.body.url).toContain(":***@");
    const read = await h.call("GET", `/api/v1/app/${appId}/endpoint/${res.body.id}`);
    expect(read.body.url).toBe(res.body.url);
  }
});

test("a broker URL that cannot be used is a 422 saying why", async () => {
  const cases: Array<[string, RegExp]> = [
    ["amqp://u:p@127.0.0.1/?queue=q", /take the options exchange and routingKey, not "queue"/],
    ["nats://127.0.0.1/path", /no path/],
    ["nats://127.0.0.1?subject=a.*", /wildcards/],
    ["nats://127.0.0.1?stream=a.b", /stream must be a name/],
    ["amqp://u:p@127.0.0.1/#frag", /fragment/],
    ["kafka://127.0.0.1:9092", /http or https \(or a broker's amqp, amqps, nats or tls\)/],
  ];
  for (const [url, why] of cases) {
    const res = await create({ url });
    expect(res.status, url).toBe(422);
    expect(res.body.detail, url).toMatch(why);
  }
});

test("a broker endpoint takes none of the HTTP-only postback fields", async () => {
  const res = await create({ url: "nats://127.0.0.1?subject=a", method: "GET" });
  expect(res.status).toBe(422);
  expect(res.body.detail).toMatch(/apply to HTTP endpoints only/);
});

test("the password is sealed at rest; *** sent back keeps it, a new one replaces it", async () => {
  const res = await create({ url: "amqp://user:first-pass@127.0.0.1/" });
  const id = res.body.id;
  const stored = async () =>
    (await h.db.pool.query("select url, destination_secret from endpoints where id = $1", [id]))
      .rows[0];
  const box = makeSecretBox(KEY);
  let row = await stored();
  expect(row.url).toBe("amqp://user@127.0.0.1/");
  expect(row.destination_secret).toMatch(/^enc:v1:/);
  expect(box.open(row.destination_secret)).toBe("first-pass");

  const kept = await h.call("PUT", `/api/v1/app/${appId}/endpoint/${id}`, { url: res.body.url });
  expect(kept.status, JSON.stringify(kept.body)).toBe(200);
  expect(box.open((await stored()).destination_secret)).toBe("first-pass");

  await h.call("PATCH", `/api/v1/app/${appId}/endpoint/${id}`, {
    url: "amqp://user:second-pass@127.0.0.1/",
  });
  expect(box.open((await stored()).destination_secret)).toBe("second-pass");

  // without a password, none is kept; *** then has nothing to keep
  await h.call("PATCH", `/api/v1/app/${appId}/endpoint/${id}`, { url: "amqp://user@127.0.0.1/" });
  row = await stored();
  expect(row.destination_secret).toBeNull();
  const masked = await h.call("PATCH", `/api/v1/app/${appId}/endpoint/${id}`, {
    url: "amqp://user:***@127.0.0.1/",
  });
  expect(masked.status).toBe(422);
  expect(masked.body.detail).toMatch(/keeps none: send the password itself/);
});

test("a broker host the SSRF guard refuses is url_not_allowed", async () => {
  for (const url of ["amqp://u:p@10.1.2.3/", "nats://169.254.169.254:4222", "nats://localhost"]) {
    const res = await create({ url });
    expect(res.status, url).toBe(422);
    expect(res.body.code, url).toBe("url_not_allowed");
  }
});

test("the OpenAPI document describes broker URLs, destinationKind and an attempt's detail", async () => {
  const doc = await h.api.inject({ method: "GET", url: "/docs/json" });
  const text = doc.body;
  expect(text).toContain("amqp://user:pass@host:5672/vhost");
  expect(text).toContain('"destinationKind"');
  expect(text).toContain('"detail"');
});

test("reencrypt-secrets re-seals broker passwords under the new key", async () => {
  const res = await create({ url: "nats://u:rotate-me@127.0.0.1?subject=a" });
  const newKey = randomBytes(32).toString("base64");
  const box = makeSecretBox(newKey, [KEY]);
  const result = await reencryptSecrets(h.db.pool, box);
  expect(result.done).toBe(true);
  const { rows } = await h.db.pool.query("select destination_secret from endpoints where id = $1", [
    res.body.id,
  ]);
  expect(box.needsReseal(rows[0].destination_secret)).toBe(false);
  expect(makeSecretBox(newKey).open(rows[0].destination_secret)).toBe("rotate-me");
});
