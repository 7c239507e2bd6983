/**
 * Standard Webhooks signatures (docs/delivery.md, Signing):
 *
 *   v1   base64(HMAC-SHA256(key, "{webhook-id}.{webhook-timestamp}.{raw body}"))
 *   v1a  base64(Ed25519 signature of the same content)
 *
 * HMAC secrets are `whsec_` + base64 of 24-64 random bytes; the HMAC key is the decoded
 * bytes. Ed25519 keys are `whsk_` secret keys (delivery/ed25519-keys.ts). During a rotation
 * grace period several keys sign at once and the header carries one signature per key,
 * space-separated.
 */
import { createHmac, type KeyObject, randomBytes, sign } from "node:crypto";
import { HookRelayError } from "../errors.ts";

export const SECRET_PREFIX = "whsec_";
const MIN_KEY_BYTES = 24;
const MAX_KEY_BYTES = 64;

export class InvalidSecretError extends HookRelayError {
  constructor(detail: string) {
    super("invalid_secret", detail);
  }
}

/** A new random secret, `whsec_` + base64 of 32 bytes. */
export function generateSecret(): string {
  return SECRET_PREFIX + randomBytes(32).toString("base64");
}

/** The HMAC key of a secret; throws InvalidSecretError for anything not `whsec_<base64 of 24-64 bytes>`. */
export function secretKey(secret: string): Buffer {
  const encoded = secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret;
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(encoded) || encoded.length % 4 !== 0) {
    throw new InvalidSecretError("secret must be whsec_ followed by standard base64");
  }
  const key = Buffer.from(encoded, "base64");
  if (key.length < MIN_KEY_BYTES || key.length > MAX_KEY_BYTES) {
    throw new InvalidSecretError(
      `secret must decode to ${MIN_KEY_BYTES}-${MAX_KEY_BYTES} bytes, got ${key.length}`,
    );
  }
  return key;
}

/** One `v1,<base64>` signature. */
export function signOne(key: Buffer, msgId: string, timestamp: number, body: string): string {
  const hmac = createHmac("sha256", key);
  hmac.update(`${msgId}.${timestamp}.`);
  hmac.update(body);
  return `v1,${hmac.digest("base64")}`;
}

/** One `v1a,<base64>` signature with an Ed25519 private key. */
export function signOneV1a(
  privateKey: KeyObject,
  msgId: string,
  timestamp: number,
  body: string,
): string {
  const content = Buffer.from(`${msgId}.${timestamp}.${body}`, "utf8");
  return `v1a,${sign(null, content, privateKey).toString("base64")}`;
}

/** A key that signs: an HMAC key (bytes, `v1`) or an Ed25519 private key (`v1a`). */
export type SigningKey = Buffer | KeyObject;

const signWith = (key: SigningKey, msgId: string, timestamp: number, body: string) =>
  Buffer.isBuffer(key)
    ? signOne(key, msgId, timestamp, body)
    : signOneV1a(key, msgId, timestamp, body);

/** The `webhook-signature` header value: one signature per key, space-separated. */
export function signatureHeader(
  keys: readonly SigningKey[],
  msgId: string,
  timestamp: number,
  body: string,
): string {
  if (keys.length === 1) return signWith(keys[0]!, msgId, timestamp, body); // no rotation under way: the usual case
  return keys.map((key) => signWith(key, msgId, timestamp, body)).join(" ");
}
