/**
 * The receiver's verification keys, parsed once.
 *
 *   whsec_<base64>  HMAC-SHA256 secret shared with the sender (v1 signatures); the prefix
 *                   is optional, as in the Standard Webhooks libraries
 *   whpk_<base64>   Ed25519 public key, 32 raw bytes (v1a signatures); the sender keeps the
 *                   matching whsk_ secret key
 *
 * See docs/delivery.md (Signing) for the sender's side and docs/receiver.md for the keys.
 */
import { createPublicKey, type KeyObject } from "node:crypto";
import { VERIFICATION_REASONS, WebhookVerificationError } from "./errors.ts";

export const HMAC_SECRET_PREFIX = "whsec_";
export const ED25519_PUBLIC_PREFIX = "whpk_";
export const ED25519_SECRET_PREFIX = "whsk_";

/** Shorter HMAC keys are refused as a configuration mistake (a truncated copy-paste). */
const MIN_HMAC_KEY_BYTES = 16;
const ED25519_PUBLIC_KEY_BYTES = 32;
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

export type VerificationKey =
  | { scheme: "v1"; index: number; hmacKey: Buffer }
  | { scheme: "v1a"; index: number; publicKey: KeyObject };

/** Parses every secret or public key; throws WebhookVerificationError("bad_secret"). */
export function parseVerificationKeys(secrets: readonly string[]): VerificationKey[] {
  if (secrets.length === 0) throw badSecret("no secret given: pass secret or secrets");
  return secrets.map((secret, index) => parseKey(secret, index));
}

function parseKey(secret: unknown, index: number): VerificationKey {
  if (typeof secret !== "string" || secret.trim() === "") {
    throw badSecret(`secret #${index} is empty`);
  }
  if (secret.startsWith(ED25519_SECRET_PREFIX)) {
    throw badSecret(
      `secret #${index} is an Ed25519 signing key (whsk_); a receiver needs the public key (whpk_)`,
    );
  }
  if (secret.startsWith(ED25519_PUBLIC_PREFIX)) {
    const raw = decode(secret.slice(ED25519_PUBLIC_PREFIX.length), index);
    if (raw.length !== ED25519_PUBLIC_KEY_BYTES) {
      throw badSecret(
        `public key #${index} must decode to ${ED25519_PUBLIC_KEY_BYTES} bytes, got ${raw.length}`,
      );
    }
    try {
      const publicKey = createPublicKey({
        key: { kty: "OKP", crv: "Ed25519", x: raw.toString("base64url") },
        format: "jwk",
      });
      return { scheme: "v1a", index, publicKey };
    } catch (err) {
      throw badSecret(`public key #${index} is not an Ed25519 key`, err);
    }
  }
  const encoded = secret.startsWith(HMAC_SECRET_PREFIX)
    ? secret.slice(HMAC_SECRET_PREFIX.length)
    : secret;
  const hmacKey = decode(encoded, index);
  if (hmacKey.length < MIN_HMAC_KEY_BYTES) {
    throw badSecret(
      `secret #${index} must decode to at least ${MIN_HMAC_KEY_BYTES} bytes, got ${hmacKey.length}`,
    );
  }
  return { scheme: "v1", index, hmacKey };
}

function decode(encoded: string, index: number): Buffer {
  if (!BASE64.test(encoded) || encoded.length % 4 !== 0) {
    throw badSecret(
      `secret #${index} must be whsec_ or whpk_ followed by standard base64 (A-Z a-z 0-9 + /, = padding)`,
    );
  }
  return Buffer.from(encoded, "base64");
}

const badSecret = (detail: string, cause?: unknown) =>
  new WebhookVerificationError(VERIFICATION_REASONS.badSecret, detail, { cause });
