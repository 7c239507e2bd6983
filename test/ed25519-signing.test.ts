/**
 * Ed25519 signatures (Standard Webhooks v1a; docs/delivery.md, Signing): endpoints that sign
 * with a whsk_ secret key instead of or beside an HMAC secret, rotation with an overlap, the
 * secret key never shown and sealed at rest, and re-encryption covering it.
 *
 * Real PostgreSQL, real deliveries to a receiver on 127.0.0.1; every v1a signature is
 * checked with the receiver kit (verifyWebhookMessage) and with tweetnacl, a library nobody
 * on the team wrote; v1 ones with the standardwebhooks library.
 */
import { randomBytes } from "node:crypto";
import type { FastifyInstance } from "fastify";
import { Webhook } from "standardwebhooks";
import nacl from "tweetnacl";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { verifyWebhookMessage } from "../src/receiver/index.ts";
import { makeSecretBox } from "../src/security/secret-box.ts";
import { buildTestApi, type Harness, startHarness } from "./helpers/harness.ts";
import { type Received, type Receiver, startReceiver, waitFor } from "./helpers/receiver.ts";

const V1 = "/api/v1";
const KEY1 = randomBytes(32).toString("base64");
const KEY2 = randomBytes(32).toString("base64");

let h: Harness;
let rx: Receiver;
let seq = 0;

beforeAll(async () => {
  // secrets sealed at rest under KEY1
  h = await startHarness({ encryptionKey: KEY1 });
  rx = await startReceiver();
  h.startWorker();
});
afterAll(async () => {
  await h?.close();
  await rx?.close();
});

interface Ep {
  appId: string;
  id: string;
  path: string;
  base: string;
  created: Record<string, unknown>;
}

/** Every response body the API gave in this file, to check none holds a secret key. */
const responses: string[] = [];

async function call(method: string, url: string, body?: unknown, api?: FastifyInstance) {
  const res = await (api ?? h.api).inject({
    method: method as "GET",
    url,
    headers: {
      authorization: `Bearer ${h.adminKey}`,
      ...(body !== undefined && { "content-type": "application/json" }),
    },
    payload: body === undefined ? undefined : JSON.stringify(body),
  });
  responses.push(res.body);
  return { status: res.statusCode, body: res.body ? JSON.parse(res.body) : null, text: res.body };
}

async function endpoint(fields: Record<string, unknown>): Promise<Ep> {
  const a = await call("POST", `${V1}/app`, { name: `ed25519 ${++seq}` });
  const path = `/ed-${seq}-${randomBytes(3).toString("hex")}`;
  const ep = await call("POST", `${V1}/app/${a.body.id}/endpoint`, {
    url: `${rx.url}${path}`,
    ...fields,
  });
  expect(ep.status, ep.text).toBe(201);
  const base = `${V1}/app/${a.body.id}/endpoint/${ep.body.id}`;
  return { appId: a.body.id, id: ep.body.id, path, base, created: ep.body };
}

async function deliver(ep: Ep): Promise<Received> {
  const msg = await call("POST", `${V1}/app/${ep.appId}/msg`, {
    eventType: "ed.test",
    payload: { n: ++seq, total: "99.50" },
  });
  expect(msg.status).toBe(202);
  let got: Received | undefined;
  await waitFor(
    () => {
      got = rx.on(ep.path).find((r) => r.headers["webhook-id"] === msg.body.id);
      return got !== undefined;
    },
    15_000,
    `delivery of ${msg.body.id}`,
  );
  return got!;
}

const headersOf = (r: Received) => ({
  "webhook-id": String(r.headers["webhook-id"]),
  "webhook-timestamp": String(r.headers["webhook-timestamp"]),
  "webhook-signature": String(r.headers["webhook-signature"]),
});
const versions = (r: Received) =>
  String(r.headers["webhook-signature"])
    .split(" ")
    .map((s) => s.split(",")[0]);

/** The receiver kit accepts it with this key alone (whsec_ or whpk_). */
function kitVerifies(key: string, r: Received): boolean {
  try {
    verifyWebhookMessage({ secret: key, headers: headersOf(r), body: r.body });
    return true;
  } catch {
    return false;
  }
}

/** tweetnacl finds a v1a signature in the header made by this whpk_ key. */
function naclVerifies(whpk: string, r: Received): boolean {
  const h = headersOf(r);
  const content = new TextEncoder().encode(
    `${h["webhook-id"]}.${h["webhook-timestamp"]}.${r.body}`,
  );
  const publicKey = new Uint8Array(Buffer.from(whpk.slice("whpk_".length), "base64"));
  return h["webhook-signature"]
    .split(" ")
    .filter((s) => s.startsWith("v1a,"))
    .some((s) =>
      nacl.sign.detached.verify(
        content,
        new Uint8Array(Buffer.from(s.slice(4), "base64")),
        publicKey,
      ),
    );
}

function hmacVerifies(secret: string, r: Received): boolean {
  try {
    new Webhook(secret).verify(r.body, headersOf(r));
    return true;
  } catch {
    return false;
  }
}

const secretOf = async (ep: Ep) => (await call("GET", `${ep.base}/secret`)).body;
const rotate = (ep: Ep, body: unknown) => call("POST", `${ep.base}/secret/rotate`, body);

async function secretRows(endpointId: string) {
  const { rows } = await h.db.pool.query(
    `select id, secret, scheme, public_key, expires_at from endpoint_secrets
     where endpoint_id = $1 order by id`,
    [endpointId],
  );
  return rows as {
    id: number;
    secret: string;
    scheme: string;
    public_key: string | null;
    expires_at: Date | null;
  }[];
}

const whsk = (kp: nacl.SignKeyPair) => `whsk_${Buffer.from(kp.secretKey).toString("base64")}`;
const whpk = (kp: nacl.SignKeyPair) => `whpk_${Buffer.from(kp.publicKey).toString("base64")}`;

// =======================================================================================

describe("an endpoint signing with Ed25519", () => {
  test("signatureScheme v1a: one v1a signature, verified by the receiver kit and by tweetnacl", async () => {
    const ep = await endpoint({ signatureScheme: "v1a" });
    expect(ep.created.signatureScheme).toBe("v1a");
    const secret = await secretOf(ep);
    expect(secret).toEqual({
      key: expect.stringMatching(/^whpk_[A-Za-z0-9+/]{43}=$/),
      publicKey: secret.key,
      signatureScheme: "v1a",
    });
    const r = await deliver(ep);
    expect(versions(r)).toEqual(["v1a"]);
    expect(kitVerifies(secret.publicKey, r)).toBe(true);
    expect(naclVerifies(secret.publicKey, r)).toBe(true);
    // a tampered body fails both
    const tampered = { ...r, body: r.body.replace("99.50", "99.5") };
    expect(kitVerifies(secret.publicKey, tampered)).toBe(false);
    expect(naclVerifies(secret.publicKey, tampered)).toBe(false);
    // another key pair's public key does not verify it
    expect(kitVerifies(whpk(nacl.sign.keyPair()), r)).toBe(false);
  });

  test("a whsk_ key given on create (tweetnacl's 64-byte form, or a 32-byte seed) is used as given", async () => {
    const kp = nacl.sign.keyPair();
    const ep = await endpoint({ secret: whsk(kp) });
    expect(ep.created.signatureScheme).toBe("v1a");
    expect((await secretOf(ep)).publicKey).toBe(whpk(kp));
    const r = await deliver(ep);
    expect(naclVerifies(whpk(kp), r)).toBe(true);
    expect(kitVerifies(whpk(kp), r)).toBe(true);

    const seeded = nacl.sign.keyPair();
    const seed = `whsk_${Buffer.from(seeded.secretKey.slice(0, 32)).toString("base64")}`;
    const ep2 = await endpoint({ secret: seed });
    expect((await secretOf(ep2)).publicKey).toBe(whpk(seeded));
    expect(naclVerifies(whpk(seeded), await deliver(ep2))).toBe(true);
  });

  test("refused: a whsk_ whose public half is another key's, wrong lengths, a key of the other scheme", async () => {
    const a = nacl.sign.keyPair();
    const b = nacl.sign.keyPair();
    const mixed = Buffer.concat([a.secretKey.slice(0, 32), b.publicKey]).toString("base64");
    const app = await call("POST", `${V1}/app`, { name: `refusals ${++seq}` });
    const url = `${rx.url}/never`;
    for (const [what, body] of [
      ["mismatched halves", { url, secret: `whsk_${mixed}` }],
      ["31 bytes", { url, secret: `whsk_${randomBytes(31).toString("base64")}` }],
      ["48 bytes", { url, secret: `whsk_${randomBytes(48).toString("base64")}` }],
      ["not base64", { url, secret: "whsk_***" }],
      [
        "whsec_ with v1a",
        { url, secret: `whsec_${randomBytes(32).toString("base64")}`, signatureScheme: "v1a" },
      ],
      ["whsk_ with v1", { url, secret: whsk(a), signatureScheme: "v1" }],
    ] as const) {
      const res = await call("POST", `${V1}/app/${app.body.id}/endpoint`, body);
      expect(res.status, what).toBe(422);
      expect(res.body.code, what).toBe("validation_error");
    }
    const bad = await call("POST", `${V1}/app/${app.body.id}/endpoint`, {
      url,
      signatureScheme: "v2",
    });
    expect(bad.status).toBe(422);
    const { rows } = await h.db.pool.query(
      "select count(*)::int as n from endpoints where url = $1",
      [url],
    );
    expect(rows[0].n).toBe(0);
  });

  test("v1+v1a: both signatures in one header; the HMAC secret and the public key each verify alone", async () => {
    const ep = await endpoint({ signatureScheme: "v1+v1a" });
    const secret = await secretOf(ep);
    expect(secret.signatureScheme).toBe("v1+v1a");
    expect(secret.key).toMatch(/^whsec_/);
    expect(secret.publicKey).toMatch(/^whpk_/);
    const r = await deliver(ep);
    expect(versions(r).sort()).toEqual(["v1", "v1a"]);
    expect(hmacVerifies(secret.key, r)).toBe(true);
    expect(kitVerifies(secret.key, r)).toBe(true);
    expect(kitVerifies(secret.publicKey, r)).toBe(true);
    expect(naclVerifies(secret.publicKey, r)).toBe(true);
  });
});

describe("rotation and changes of scheme", () => {
  test("HMAC rotated to Ed25519: the old secret signs beside the new key for the grace period, then stops", async () => {
    const ep = await endpoint({});
    const old = (await secretOf(ep)).key;
    expect(old).toMatch(/^whsec_/);
    expect((await rotate(ep, { scheme: "v1a", gracePeriodSeconds: 3600 })).status).toBe(204);
    const now = await secretOf(ep);
    expect(now).toMatchObject({ signatureScheme: "v1a", key: now.publicKey });
    const r = await deliver(ep);
    expect(versions(r).sort()).toEqual(["v1", "v1a"]);
    expect(hmacVerifies(old, r)).toBe(true);
    expect(kitVerifies(now.publicKey, r)).toBe(true);
    expect(naclVerifies(now.publicKey, r)).toBe(true);
    // a receiver holding both keys during its own switch-over
    expect(
      verifyWebhookMessage({ secrets: [old, now.publicKey], headers: headersOf(r), body: r.body })
        .scheme,
    ).toMatch(/^v1a?$/);

    // the grace period ends: only the Ed25519 key signs
    await h.db.pool.query(
      "update endpoint_secrets set expires_at = now() - interval '1 second' where endpoint_id = $1 and expires_at is not null",
      [ep.id],
    );
    const after = await deliver(ep);
    expect(versions(after)).toEqual(["v1a"]);
    expect(hmacVerifies(old, after)).toBe(false);
    expect(naclVerifies(now.publicKey, after)).toBe(true);
  });

  test("Ed25519 rotated to a new key pair: old and new public keys each verify during the overlap; grace 0 ends it at once", async () => {
    const ep = await endpoint({ signatureScheme: "v1a" });
    const first = (await secretOf(ep)).publicKey;
    expect((await rotate(ep, { gracePeriodSeconds: 3600 })).status).toBe(204);
    const second = (await secretOf(ep)).publicKey;
    expect(second).not.toBe(first);
    const r = await deliver(ep);
    expect(versions(r)).toEqual(["v1a", "v1a"]);
    for (const key of [first, second]) {
      expect(kitVerifies(key, r), key).toBe(true);
      expect(naclVerifies(key, r), key).toBe(true);
    }
    const kp = nacl.sign.keyPair();
    expect((await rotate(ep, { key: whsk(kp), gracePeriodSeconds: 0 })).status).toBe(204);
    expect((await secretOf(ep)).publicKey).toBe(whpk(kp));
    // grace 0 ends the key it replaced (`second`) at once; `first` keeps its own hour
    const r2 = await deliver(ep);
    expect(versions(r2)).toEqual(["v1a", "v1a"]);
    expect(naclVerifies(whpk(kp), r2)).toBe(true);
    expect(kitVerifies(second, r2)).toBe(false);
    expect(kitVerifies(first, r2)).toBe(true);
  });

  test("PATCH signatureScheme: a scheme added gets a key at once, a scheme dropped signs 24 h more", async () => {
    const ep = await endpoint({});
    const hmac = (await secretOf(ep)).key;
    const both = await call("PATCH", ep.base, { signatureScheme: "v1+v1a" });
    expect(both.status, both.text).toBe(200);
    expect(both.body.signatureScheme).toBe("v1+v1a");
    const s = await secretOf(ep);
    expect(s.key).toBe(hmac); // the HMAC secret is kept
    expect((await secretRows(ep.id)).map((r) => [r.scheme, r.expires_at])).toEqual([
      ["v1", null],
      ["v1a", null],
    ]);
    const only = await call("PATCH", ep.base, { signatureScheme: "v1a" });
    expect(only.body.signatureScheme).toBe("v1a");
    const rows = await secretRows(ep.id);
    const retired = rows.find((r) => r.scheme === "v1")!;
    const hoursLeft = (retired.expires_at!.getTime() - Date.now()) / 3_600_000;
    expect(hoursLeft).toBeGreaterThan(23.9);
    expect(hoursLeft).toBeLessThanOrEqual(24);
    const r = await deliver(ep);
    expect(hmacVerifies(hmac, r)).toBe(true);
    expect(naclVerifies(s.publicKey, r)).toBe(true);
    expect((await secretOf(ep)).key).toBe(s.publicKey);
    // PUT keeps the keys as they are when it does not name a scheme
    const put = await call("PUT", ep.base, { url: `${rx.url}${ep.path}` });
    expect(put.body.signatureScheme).toBe("v1a");
  });
});

describe("the secret key at rest", () => {
  test("it is never returned: not on create, get, list, PATCH or the secret route", async () => {
    const ep = await endpoint({ signatureScheme: "v1+v1a" });
    await call("GET", ep.base);
    await call("GET", `${V1}/app/${ep.appId}/endpoint`);
    await call("PATCH", ep.base, { description: "x" });
    await secretOf(ep);
    await call("GET", "/docs/json");
    // (error details may name the prefix; a key is the prefix and its base64)
    for (const body of responses) expect(body).not.toMatch(/whsk_[A-Za-z0-9+/]{16}/);
    expect(responses.length).toBeGreaterThan(30);
  });

  test("it is sealed in the row (AES-256-GCM under the configured key); the public key is stored beside it", async () => {
    const kp = nacl.sign.keyPair();
    const ep = await endpoint({ secret: whsk(kp) });
    const [row] = await secretRows(ep.id);
    expect(row).toMatchObject({ scheme: "v1a", public_key: whpk(kp), expires_at: null });
    expect(row!.secret).toMatch(/^enc:v1:[0-9a-f]{8}:/);
    const seedB64 = Buffer.from(kp.secretKey.slice(0, 32)).toString("base64");
    const seedHex = Buffer.from(kp.secretKey.slice(0, 32)).toString("hex");
    for (const plain of [whsk(kp), seedB64, seedHex]) expect(row!.secret).not.toContain(plain);
    expect(makeSecretBox(KEY1).open(row!.secret)).toBe(whsk(kp));
  });

  test("reencrypt-secrets re-seals the Ed25519 keys under the new key, which alone opens them", async () => {
    const kp = nacl.sign.keyPair();
    const ep = await endpoint({ secret: whsk(kp) });
    const box2 = makeSecretBox(KEY2, [KEY1]);
    const api2 = await buildTestApi({ pool: h.db.pool, config: h.config, secretBox: box2 });
    try {
      let after: number | undefined;
      for (;;) {
        const res = await call(
          "POST",
          `${V1}/operations/reencrypt-secrets`,
          after === undefined ? {} : { after },
          api2,
        );
        expect(res.status, res.text).toBe(200);
        if (res.body.done) break;
        after = res.body.after;
      }
      const keyId2 = makeSecretBox(KEY2).seal("x").split(":")[2];
      const { rows } = await h.db.pool.query<{ secret: string; scheme: string }>(
        "select secret, scheme from endpoint_secrets",
      );
      expect(rows.some((r) => r.scheme === "v1a")).toBe(true);
      for (const r of rows) expect(r.secret.startsWith(`enc:v1:${keyId2}:`), r.scheme).toBe(true);
      const [row] = await secretRows(ep.id);
      expect(makeSecretBox(KEY2).open(row!.secret)).toBe(whsk(kp));
    } finally {
      await api2.close();
    }
  });
});
