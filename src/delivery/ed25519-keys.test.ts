import nacl from "tweetnacl";
import { describe, expect, test } from "vitest";
import { ed25519PublicKey, generateEd25519Secret, parseEd25519Secret } from "./ed25519-keys.ts";
import { InvalidSecretError, signatureHeader, signOneV1a } from "./sign.ts";
import { signingKeyOf } from "./signing-key.ts";

describe("Ed25519 keys", () => {
  test("generated keys are whsk_ + 64 bytes: the seed, then the public key NaCl derives from it", () => {
    const secret = generateEd25519Secret();
    expect(secret).toMatch(/^whsk_[A-Za-z0-9+/]{86}==$/);
    const raw = Buffer.from(secret.slice(5), "base64");
    const kp = nacl.sign.keyPair.fromSeed(new Uint8Array(raw.subarray(0, 32)));
    expect(Buffer.from(kp.secretKey).equals(raw)).toBe(true);
    expect(ed25519PublicKey(secret)).toBe(`whpk_${Buffer.from(kp.publicKey).toString("base64")}`);
    expect(generateEd25519Secret()).not.toBe(secret);
  });

  test("v1a signatures verify with tweetnacl; the header mixes v1 and v1a", () => {
    const kp = nacl.sign.keyPair();
    const secret = `whsk_${Buffer.from(kp.secretKey).toString("base64")}`;
    const key = parseEd25519Secret(secret);
    const sig = signOneV1a(key.privateKey, "msg_1", 1700000000, '{"a":1}');
    expect(sig).toMatch(/^v1a,[A-Za-z0-9+/]{86}==$/);
    const content = new TextEncoder().encode('msg_1.1700000000.{"a":1}');
    expect(
      nacl.sign.detached.verify(content, Buffer.from(sig.slice(4), "base64"), kp.publicKey),
    ).toBe(true);
    const hmac = signingKeyOf(`whsec_${Buffer.alloc(32, 7).toString("base64")}`);
    const header = signatureHeader([hmac, key.privateKey], "msg_1", 1700000000, '{"a":1}');
    expect(header.split(" ").map((s) => s.split(",")[0])).toEqual(["v1", "v1a"]);
    expect(header.split(" ")[1]).toBe(sig); // Ed25519 is deterministic
  });

  test("malformed keys are refused", () => {
    const kp = nacl.sign.keyPair();
    const other = nacl.sign.keyPair();
    for (const bad of [
      "whsk_",
      "whsk_abc",
      `whsk_${Buffer.alloc(33).toString("base64")}`,
      `whsk_${Buffer.concat([kp.secretKey.slice(0, 32), other.publicKey]).toString("base64")}`,
      `whsec_${Buffer.alloc(32).toString("base64")}`,
    ]) {
      expect(() => parseEd25519Secret(bad), bad).toThrow(InvalidSecretError);
    }
  });
});
