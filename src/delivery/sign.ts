/**
 * Standard Webhooks signatures (SHA-256 HMAC, `v1,<base64>`).
 *
 *   signature = base64(HMAC-SHA256(key, "{webhook-id}.{webhook-timestamp}.{raw body}"))
 *
 * Secrets are `whsec_` + base64 of 24-64 random bytes; the HMAC key is the decoded bytes.
 * During a rotation grace period several secrets sign at once and the header carries one
 * `v1,...` per secret, space-separated.
 */
import { createHmac, randomBytes } from "node:crypto";
import { HookRelayError } from "../errors.ts";

export const SECRET_PREFIX = "whsec_";
const MIN_KEY_BYTES = 24;
const MAX_KEY_BYTES = 64;

export class InvalidSecretError extends HookRelayError {
  constructor(detail: string) {
    super("HR_ERR_INVALID_SECRET", detail);
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

/** The `webhook-signature` header value: one signature per key, space-separated. */
export function signatureHeader(
  keys: readonly Buffer[],
  msgId: string,
  timestamp: number,
  body: string,
): string {
  if (keys.length === 1) return signOne(keys[0]!, msgId, timestamp, body); // no rotation under way: the usual case
  return keys.map((key) => signOne(key, msgId, timestamp, body)).join(" ");
}
