import { createHmac, randomBytes } from "node:crypto";
import fc from "fast-check";
import { Webhook } from "standardwebhooks";
import nacl from "tweetnacl";
import { describe, expect, test } from "vitest";
import {
  ed25519KeyPair,
  signedWebhook,
  signV1a,
  whpkOf,
} from "../../test/helpers/signed-webhook.ts";
import { generateSecret, secretKey } from "../delivery/sign.ts";
import { ConfigError } from "../errors.ts";
import { type VerificationReason, WebhookVerificationError } from "./errors.ts";
import { type VerifyWebhookOptions, verifyWebhook, verifyWebhookMessage } from "./verify.ts";

/** The reason verifyWebhook refuses with, or "ok". */
function outcome(options: VerifyWebhookOptions): VerificationReason | "ok" {
  try {
    verifyWebhook(options);
    return "ok";
  } catch (err) {
    if (err instanceof WebhookVerificationError) return err.reason;
    throw err;
  }
}

const at = (unixSec: number) => () => unixSec * 1000;

// The test vectors the Standard Webhooks reference libraries share in their test suites.
const SPEC = {
  secret: "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
  msgId: "msg_p5jXN8AQM9LWM0D4loKWxJek",
  timestamp: 1614265330,
  payload: '{"test": 2432232314}',
  v1: "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
  /** Ed25519 seed of the asymmetric vector (the sender's secret key) */
  ed25519Seed: "VEVTVFNJR05JTkdLRVlET05PVFVTRVRISVNGT1JBTlk=",
  v1a: "v1a,tQ9V2XOqn7jL/DQenEFpqIugdBVtiMmER5mhSkXBNwM0mkATuDe6KYYUuxqtaiHeYGb7KaaBRdM5WqyeFiL8Ag==",
  /** signatures the vectors use as "invalid" and as noise in a multi-signature header */
  bogus: "Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc=",
} as const;

const specPublicKey = () =>
  `whpk_${Buffer.from(nacl.sign.keyPair.fromSeed(Buffer.from(SPEC.ed25519Seed, "base64")).publicKey).toString("base64")}`;

const specHeaders = (signature: string) => ({
  "webhook-id": SPEC.msgId,
  "webhook-timestamp": String(SPEC.timestamp),
  "webhook-signature": signature,
});

describe("the Standard Webhooks test vectors", () => {
  test("v1: the known signature verifies, with or without the whsec_ prefix", () => {
    for (const secret of [SPEC.secret, `whsec_${SPEC.secret}`]) {
      const message = verifyWebhookMessage({
        secret,
        headers: specHeaders(SPEC.v1),
        body: SPEC.payload,
        clock: at(SPEC.timestamp),
      });
      expect(message).toEqual({
        id: SPEC.msgId,
        timestamp: SPEC.timestamp,
        payload: { test: 2432232314 },
        scheme: "v1",
        keyIndex: 0,
      });
    }
  });

  test("v1a: the known Ed25519 signature verifies with the seed's public key", () => {
    expect(specPublicKey()).toBe("whpk_ZlN4eg7dSSqi0moX9hQUk3orrOouK3QVQSlJa248c/g=");
    const message = verifyWebhookMessage({
      secret: specPublicKey(),
      headers: specHeaders(SPEC.v1a),
      body: SPEC.payload,
      clock: at(SPEC.timestamp),
    });
    expect(message).toMatchObject({ scheme: "v1a", payload: { test: 2432232314 } });
  });

  for (const [scheme, valid] of [
    ["v1", SPEC.v1],
    ["v1a", SPEC.v1a],
  ] as const) {
    const secret = scheme === "v1" ? SPEC.secret : specPublicKey();
    const check = (
      headers: Record<string, string>,
      options: { now?: number; body?: string } = {},
    ) =>
      outcome({
        secret,
        headers,
        body: options.body ?? SPEC.payload,
        clock: at(options.now ?? SPEC.timestamp),
      });

    test(`${scheme}: each tampered case is refused with its reason`, () => {
      const without = (name: string) => {
        const headers: Record<string, string> = specHeaders(valid);
        delete headers[name];
        return headers;
      };
      expect(check(specHeaders(valid))).toBe("ok");
      expect(check(without("webhook-id"))).toBe("missing_header");
      expect(check(without("webhook-timestamp"))).toBe("missing_header");
      expect(check(without("webhook-signature"))).toBe("missing_header");
      expect(check({ ...specHeaders(valid), "webhook-timestamp": "hello" })).toBe("bad_timestamp");
      expect(check(specHeaders(`${scheme},${SPEC.bogus}`))).toBe("no_matching_signature");
      expect(check(specHeaders("v1,dawfeoifkpqwoekfpqoekf"))).toBe("no_matching_signature");
      expect(check(specHeaders(valid.slice(0, 8)))).toBe("no_matching_signature"); // partial
      expect(check(specHeaders(`${scheme},`))).toBe("no_matching_signature");
      expect(check(specHeaders(valid), { body: '{"test": 2432232315}' })).toBe(
        "no_matching_signature",
      );
      // 5 minutes of tolerance, both ways
      expect(check(specHeaders(valid), { now: SPEC.timestamp + 300 })).toBe("ok");
      expect(check(specHeaders(valid), { now: SPEC.timestamp + 301 })).toBe("timestamp_too_old");
      expect(check(specHeaders(valid), { now: SPEC.timestamp - 300 })).toBe("ok");
      expect(check(specHeaders(valid), { now: SPEC.timestamp - 301 })).toBe("timestamp_too_new");
    });

    test(`${scheme}: a multi-signature header with noise around the valid one verifies`, () => {
      const noisy = [`v1,${SPEC.bogus}`, `v2,${SPEC.bogus}`, valid, `v1,${SPEC.bogus}`].join(" ");
      expect(check(specHeaders(noisy))).toBe("ok");
    });
  }
});

describe("keys and rotation", () => {
  test("during a rotation a message signed by either secret verifies; keyIndex says which", () => {
    const [old, current] = [generateSecret(), generateSecret()];
    const both = signedWebhook({ secrets: [current, old] });
    // the header's first matching signature decides: here the current secret's
    expect(verifyWebhookMessage({ secrets: [old, current], ...both }).keyIndex).toBe(1);
    const onlyOld = signedWebhook({ secrets: [old] });
    expect(verifyWebhookMessage({ secrets: [old, current], ...onlyOld }).keyIndex).toBe(0);
    const onlyNew = signedWebhook({ secrets: [current] });
    expect(verifyWebhookMessage({ secrets: [old, current], ...onlyNew }).keyIndex).toBe(1);
    expect(outcome({ secrets: [generateSecret()], ...both })).toBe("no_matching_signature");
  });

  test("HMAC secrets and Ed25519 public keys mix, in one header and one key list", () => {
    const secret = generateSecret();
    const ed = ed25519KeyPair();
    const v1aOnly = signedWebhook({ privateKeys: [ed.privateKey] });
    expect(verifyWebhookMessage({ secrets: [secret, ed.whpk], ...v1aOnly })).toMatchObject({
      scheme: "v1a",
      keyIndex: 1,
    });
    const both = signedWebhook({ secrets: [secret], privateKeys: [ed.privateKey] });
    expect(verifyWebhookMessage({ secret: ed.whpk, ...both }).scheme).toBe("v1a");
    expect(verifyWebhookMessage({ secret, ...both }).scheme).toBe("v1");
  });

  test("a header without a signature of the receiver's key type says so", () => {
    const ed = ed25519KeyPair();
    const v1aOnly = signedWebhook({ privateKeys: [ed.privateKey] });
    expect(() => verifyWebhook({ secret: generateSecret(), ...v1aOnly })).toThrow(
      /no v1 signature in webhook-signature \(it has v1a\); check the key type/,
    );
  });

  test("malformed secrets are refused as bad_secret (status 500), never echoed", () => {
    const request = signedWebhook({ secrets: [generateSecret()] });
    const refused = (secret: string) => {
      try {
        verifyWebhook({ secret, ...request });
      } catch (err) {
        expect(err).toBeInstanceOf(WebhookVerificationError);
        const e = err as WebhookVerificationError;
        expect(e.reason).toBe("bad_secret");
        expect(e.status).toBe(500);
        if (secret.length > 8) expect(e.message).not.toContain(secret.slice(6));
        return e.message;
      }
      throw new Error(`accepted ${secret}`);
    };
    expect(refused("whsec_not base64!!")).toMatch(/standard base64/);
    expect(refused(`whsec_${randomBytes(8).toString("base64")}`)).toMatch(/at least 16 bytes/);
    expect(refused(`whsk_${randomBytes(32).toString("base64")}`)).toMatch(/needs the public key/);
    expect(refused(`whpk_${randomBytes(31).toString("base64")}`)).toMatch(/32 bytes, got 31/);
    expect(refused("")).toMatch(/empty/);
    expect(() => verifyWebhook({ secrets: [], ...request })).toThrow(/no secret given/);
  });

  test("options are checked", () => {
    const request = signedWebhook({ secrets: [generateSecret()] });
    const secret = generateSecret();
    expect(() => verifyWebhook({ secret, secrets: [secret], ...request })).toThrow(ConfigError);
    expect(() => verifyWebhook({ secret, toleranceSec: -1, ...request })).toThrow(ConfigError);
    expect(() => verifyWebhook({ secret, toleranceSec: Number.NaN, ...request })).toThrow(
      /toleranceSec/,
    );
  });
});

describe("headers and body", () => {
  const secret = generateSecret();
  const request = signedWebhook({ secrets: [secret] });

  test("headers: any letter case, Fetch Headers, string[] values, repeated signature headers", () => {
    const upper = Object.fromEntries(
      Object.entries(request.headers).map(([k, v]) => [k.toUpperCase(), v]),
    );
    expect(outcome({ secret, headers: upper, body: request.body })).toBe("ok");
    expect(outcome({ secret, headers: new Headers(request.headers), body: request.body })).toBe(
      "ok",
    );
    const noise = `v1,${randomBytes(32).toString("base64")}`;
    const asArray = {
      ...request.headers,
      "webhook-signature": [noise, request.headers["webhook-signature"]!],
    };
    expect(outcome({ secret, headers: asArray, body: request.body })).toBe("ok");
    const repeated = new Headers(request.headers);
    repeated.set("webhook-signature", noise);
    repeated.append("webhook-signature", request.headers["webhook-signature"]!);
    expect(repeated.get("webhook-signature")).toContain(", ");
    expect(outcome({ secret, headers: repeated, body: request.body })).toBe("ok");
  });

  test("svix-id, svix-timestamp and svix-signature are read when webhook-id is absent", () => {
    const svix = Object.fromEntries(
      Object.entries(request.headers).map(([k, v]) => [k.replace("webhook-", "svix-"), v]),
    );
    expect(outcome({ secret, headers: svix, body: request.body })).toBe("ok");
  });

  test("the body is raw bytes or a string; a parsed object is refused (status 500)", () => {
    expect(outcome({ secret, headers: request.headers, body: Buffer.from(request.body) })).toBe(
      "ok",
    );
    // a view into a larger buffer: only its own bytes count
    const padded = Buffer.from(`xx${request.body}yy`);
    const view = new Uint8Array(padded.buffer, padded.byteOffset + 2, padded.length - 4);
    expect(outcome({ secret, headers: request.headers, body: view })).toBe("ok");
    const parsed = JSON.parse(request.body);
    expect(outcome({ secret, headers: request.headers, body: parsed })).toBe("body_not_raw");
    // what a JSON body parser hands on, serialized again: other bytes, no match
    expect(JSON.stringify(parsed)).not.toBe(request.body);
    expect(outcome({ secret, headers: request.headers, body: JSON.stringify(parsed) })).toBe(
      "no_matching_signature",
    );
  });

  test("postback bodies: a form is read as its fields, no body (a GET) is a null payload", () => {
    const form = signedWebhook({ secrets: [secret], body: "cid=c%2F1&payout=99.50&tag=a&tag=b" });
    const headers = { ...form.headers, "content-type": "application/x-www-form-urlencoded" };
    const fields = verifyWebhook({ secret, headers, body: form.body });
    expect({ ...(fields as object) }).toEqual({ cid: "c/1", payout: "99.50", tag: ["a", "b"] });
    expect(Object.getPrototypeOf(fields)).toBeNull();
    const evil = signedWebhook({ secrets: [secret], body: "__proto__=x" });
    const own = verifyWebhook<Record<string, string>>({
      secret,
      headers: {
        ...evil.headers,
        "Content-Type": "application/x-www-form-urlencoded; charset=utf-8",
      },
      body: evil.body,
    });
    expect(Object.keys(own)).toEqual(["__proto__"]);
    const get = signedWebhook({ secrets: [secret], body: "" });
    expect(verifyWebhookMessage({ secret, ...get })).toMatchObject({ id: get.id, payload: null });
  });

  test("a correctly signed body that is not JSON is body_not_json", () => {
    const text = signedWebhook({ secrets: [secret], body: "cid=1&payout=2" });
    expect(outcome({ secret, ...text })).toBe("body_not_json");
    // signed bytes that are not UTF-8 (é as one latin-1 byte)
    const bytes = Buffer.from('"caf\u00e9"', "latin1");
    const timestamp = Math.floor(Date.now() / 1000);
    const mac = createHmac("sha256", secretKey(secret))
      .update(`msg_latin1.${timestamp}.`)
      .update(bytes)
      .digest("base64");
    const headers = {
      "webhook-id": "msg_latin1",
      "webhook-timestamp": String(timestamp),
      "webhook-signature": `v1,${mac}`,
    };
    expect(outcome({ secret, headers, body: bytes })).toBe("body_not_json");
  });

  test("the error has a stable code and a JSON body with its reason", () => {
    try {
      verifyWebhook({ secret, headers: request.headers, body: `${request.body} ` });
      throw new Error("accepted");
    } catch (err) {
      const e = err as WebhookVerificationError;
      expect(e.code).toBe("webhook_verification_failed");
      expect(e.status).toBe(401);
      expect(e.toJSON()).toEqual({
        code: "webhook_verification_failed",
        reason: "no_matching_signature",
        detail: expect.stringMatching(/wrong secret, or the body was changed/),
      });
    }
  });
});

describe("cross-checked with the standardwebhooks library", () => {
  const jsonBody = fc.jsonValue().map((v) => JSON.stringify({ data: v }));
  const idArb = fc.stringMatching(/^msg_[A-Za-z0-9]{1,30}$/);
  const secretArb = fc
    .integer({ min: 24, max: 64 })
    .map((n) => `whsec_${randomBytes(n).toString("base64")}`);

  test("what the library signs the kit accepts, and a changed body neither accepts", () => {
    fc.assert(
      fc.property(secretArb, idArb, jsonBody, fc.nat(1000), (secret, id, body, flip) => {
        const timestamp = new Date();
        const headers = {
          "webhook-id": id,
          "webhook-timestamp": String(Math.floor(timestamp.getTime() / 1000)),
          "webhook-signature": new Webhook(secret).sign(id, timestamp, body),
        };
        expect(verifyWebhook({ secret, headers, body })).toEqual(JSON.parse(body));
        const i = flip % body.length;
        const changed = body.slice(0, i) + (body[i] === "1" ? "2" : "1") + body.slice(i + 1);
        expect(outcome({ secret, headers, body: changed })).toBe("no_matching_signature");
        expect(() => new Webhook(secret).verify(changed, headers)).toThrow();
      }),
      { numRuns: 200 },
    );
  });

  test("what the kit accepts (signed by hookrelay's signer) the library accepts too", () => {
    fc.assert(
      fc.property(secretArb, secretArb, idArb, jsonBody, (a, b, id, body) => {
        const request = signedWebhook({ secrets: [a, b], id, body });
        for (const secret of [a, b]) {
          expect(verifyWebhook({ secret, ...request })).toEqual(JSON.parse(body));
          expect(new Webhook(secret).verify(body, request.headers)).toEqual(JSON.parse(body));
        }
      }),
      { numRuns: 100 },
    );
  });

  test("on the spec's refusal cases the library and the kit agree", () => {
    const now = signedWebhook({ secrets: [`whsec_${SPEC.secret}`], body: SPEC.payload });
    const cases: Record<string, string>[] = [
      now.headers,
      { ...now.headers, "webhook-signature": `v1,${SPEC.bogus}` },
      { ...now.headers, "webhook-signature": "v1," },
      { ...now.headers, "webhook-timestamp": "hello" },
      { ...now.headers, "webhook-timestamp": String(now.timestamp - 400) },
      { ...now.headers, "webhook-timestamp": String(now.timestamp + 400) },
      { "webhook-id": now.id, "webhook-timestamp": String(now.timestamp) },
    ];
    for (const headers of cases) {
      let library = "ok";
      try {
        new Webhook(SPEC.secret).verify(SPEC.payload, headers);
      } catch {
        library = "refused";
      }
      const kit = outcome({ secret: SPEC.secret, headers, body: SPEC.payload });
      expect(kit === "ok" ? "ok" : "refused", JSON.stringify(headers)).toBe(library);
    }
  });
});

describe("Ed25519 (v1a)", () => {
  test("a key pair made with node:crypto: signed verifies, tampered or another key does not", () => {
    const ed = ed25519KeyPair();
    const request = signedWebhook({ privateKeys: [ed.privateKey] });
    expect(verifyWebhookMessage({ secret: ed.whpk, ...request }).scheme).toBe("v1a");
    expect(outcome({ secret: ed.whpk, ...request, body: `${request.body} ` })).toBe(
      "no_matching_signature",
    );
    expect(outcome({ secret: ed25519KeyPair().whpk, ...request })).toBe("no_matching_signature");
  });

  test("signed with tweetnacl, verified by the kit; and the kit's accepted signatures nacl accepts", () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 32, maxLength: 32 }), fc.jsonValue(), (seed, v) => {
        const pair = nacl.sign.keyPair.fromSeed(seed);
        const whpk = `whpk_${Buffer.from(pair.publicKey).toString("base64")}`;
        const id = "msg_nacl";
        const timestamp = Math.floor(Date.now() / 1000);
        const body = JSON.stringify({ v });
        const content = Buffer.from(`${id}.${timestamp}.${body}`);
        const signature = Buffer.from(nacl.sign.detached(content, pair.secretKey));
        const headers = {
          "webhook-id": id,
          "webhook-timestamp": String(timestamp),
          "webhook-signature": `v1a,${signature.toString("base64")}`,
        };
        // The payload as JSON carries it (-0 is sent as 0).
        expect(verifyWebhook({ secret: whpk, headers, body })).toEqual(JSON.parse(body));
        expect(nacl.sign.detached.verify(content, signature, pair.publicKey)).toBe(true);
      }),
      { numRuns: 20 },
    );
  });

  test("node:crypto's signature of the spec vector is the spec's (Ed25519 is deterministic)", async () => {
    const { createPrivateKey, createPublicKey } = await import("node:crypto");
    const seed = Buffer.from(SPEC.ed25519Seed, "base64");
    // a raw Ed25519 seed in PKCS#8 DER: a fixed 16-byte header, then the 32-byte seed
    const der = Buffer.concat([Buffer.from("302e020100300506032b657004220420", "hex"), seed]);
    const privateKey = createPrivateKey({ key: der, format: "der", type: "pkcs8" });
    expect(whpkOf(createPublicKey(privateKey))).toBe(specPublicKey());
    expect(signV1a(privateKey, SPEC.msgId, SPEC.timestamp, SPEC.payload)).toBe(SPEC.v1a);
  });
});
