/**
 * Standard Webhooks verification, receiver side (docs/receiver.md; the sender's rules are
 * docs/delivery.md, Signing):
 *
 *   signed content = "{webhook-id}.{webhook-timestamp}.{raw body}"
 *   v1   base64(HMAC-SHA256(secret key, content)), 32 bytes, compared in constant time
 *   v1a  base64(Ed25519 signature of content), 64 bytes, checked with the whpk_ public key
 *
 * webhook-signature is a space-separated list of `version,signature` entries; the message is
 * authentic when any entry matches any key (several keys during a rotation). Checks run in a
 * fixed order: headers, timestamp format, timestamp within tolerance, signature, body.
 *
 * The body is read by what it is: JSON (the usual webhook), a form
 * (`application/x-www-form-urlencoded`, a postback endpoint with `bodyFormat: "form"`), or
 * nothing (a GET postback, whose values are in the URL): payload null.
 */
import { createHmac, timingSafeEqual, verify as verifySignature } from "node:crypto";
import { ConfigError } from "../errors.ts";
import { VERIFICATION_REASONS, WebhookVerificationError } from "./errors.ts";
import { type HeadersLike, readWebhookHeaders } from "./headers.ts";
import { parseVerificationKeys, type VerificationKey } from "./keys.ts";

/** Default tolerance in both directions: 5 minutes. */
export const DEFAULT_TOLERANCE_SEC = 300;

const HMAC_SHA256_BYTES = 32;
const ED25519_SIGNATURE_BYTES = 64;
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;
/** unix seconds; 12 digits reach the year 33658, more is not a timestamp */
const TIMESTAMP = /^[0-9]{1,12}$/;

export interface WebhookVerifierOptions {
  /** one whsec_ secret or whpk_ public key */
  secret?: string;
  /** several, during a rotation: a message signed by any of them is accepted */
  secrets?: readonly string[];
  /** how far webhook-timestamp may be from now, in seconds, both directions; default 300 */
  toleranceSec?: number;
  /** the clock, in milliseconds since the epoch; default Date.now */
  clock?: () => number;
}

export interface VerifyWebhookOptions extends WebhookVerifierOptions {
  headers: HeadersLike;
  /** the raw body exactly as received: a Buffer (or Uint8Array) or a string */
  body: string | Uint8Array;
}

/** A message whose signature and timestamp checked out. */
export interface VerifiedWebhook<T = unknown> {
  /** webhook-id: the message id, the same on every retry; the key to deduplicate by */
  id: string;
  /** webhook-timestamp, unix seconds */
  timestamp: number;
  /** the parsed body: JSON as sent, a form's fields (a repeated name: an array), or null for no body */
  payload: T;
  /** which scheme matched: v1 (HMAC) or v1a (Ed25519) */
  scheme: "v1" | "v1a";
  /** the position of the matching key in `secrets` (0 for `secret`) */
  keyIndex: number;
}

export interface WebhookVerifier {
  /** Verifies one request; throws WebhookVerificationError. */
  verify<T = unknown>(headers: HeadersLike, body: string | Uint8Array): VerifiedWebhook<T>;
}

/** A verifier with its keys parsed once (throws WebhookVerificationError("bad_secret") now). */
export function makeWebhookVerifier(options: WebhookVerifierOptions): WebhookVerifier {
  const keys = parseVerificationKeys(secretList(options));
  const toleranceSec = options.toleranceSec ?? DEFAULT_TOLERANCE_SEC;
  if (!Number.isFinite(toleranceSec) || toleranceSec < 0) {
    throw new ConfigError(`toleranceSec must be a number of seconds >= 0, got ${toleranceSec}`);
  }
  const clock = options.clock ?? Date.now;
  return {
    verify<T>(headers: HeadersLike, body: string | Uint8Array): VerifiedWebhook<T> {
      const bytes = rawBytes(body);
      const { id, timestamp, signature, contentType } = readWebhookHeaders(headers);
      const missing = [
        !id?.trim() && "webhook-id",
        !timestamp?.trim() && "webhook-timestamp",
        !signature?.trim() && "webhook-signature",
      ].filter(Boolean);
      if (missing.length > 0 || !id || !timestamp || !signature) {
        throw fail(VERIFICATION_REASONS.missingHeader, `missing header: ${missing.join(", ")}`);
      }
      if (!TIMESTAMP.test(timestamp)) {
        throw fail(
          VERIFICATION_REASONS.badTimestamp,
          "webhook-timestamp must be whole unix seconds",
        );
      }
      const sentAt = Number(timestamp);
      const now = Math.floor(clock() / 1000);
      if (sentAt < now - toleranceSec) {
        throw fail(
          VERIFICATION_REASONS.timestampTooOld,
          `webhook-timestamp is ${now - sentAt} s old, more than the ${toleranceSec} s tolerance`,
        );
      }
      if (sentAt > now + toleranceSec) {
        throw fail(
          VERIFICATION_REASONS.timestampTooNew,
          `webhook-timestamp is ${sentAt - now} s ahead, more than the ${toleranceSec} s tolerance`,
        );
      }
      // The header's own text is signed, not a re-formatted number.
      const matched = matchSignature(keys, signature, `${id}.${timestamp}.`, bytes);
      if (!matched) {
        throw fail(VERIFICATION_REASONS.noMatchingSignature, noMatchDetail(keys, signature));
      }
      return { id, timestamp: sentAt, payload: parseBody<T>(bytes, contentType), ...matched };
    },
  };
}

/** Verifies a webhook and returns its parsed payload; throws WebhookVerificationError. */
export function verifyWebhook<T = unknown>(options: VerifyWebhookOptions): T {
  return verifyWebhookMessage<T>(options).payload;
}

/** Verifies a webhook and returns its id, timestamp, payload and the key that matched. */
export function verifyWebhookMessage<T = unknown>(
  options: VerifyWebhookOptions,
): VerifiedWebhook<T> {
  return makeWebhookVerifier(options).verify<T>(options.headers, options.body);
}

function secretList(options: WebhookVerifierOptions): readonly string[] {
  if (options.secret !== undefined && options.secrets !== undefined) {
    throw new ConfigError("pass either secret or secrets, not both");
  }
  return options.secrets ?? (options.secret === undefined ? [] : [options.secret]);
}

function rawBytes(body: unknown): Buffer {
  if (typeof body === "string") return Buffer.from(body, "utf8");
  if (body instanceof Uint8Array) return Buffer.from(body.buffer, body.byteOffset, body.length);
  throw fail(
    VERIFICATION_REASONS.bodyNotRaw,
    `body must be the raw request body (Buffer or string), got ${body === null ? "null" : typeof body}: ` +
      "a parsed and re-serialized object does not have the bytes that were signed",
  );
}

/** The first entry of the header that matches a key, or null. */
function matchSignature(
  keys: readonly VerificationKey[],
  header: string,
  prefix: string,
  body: Buffer,
): { scheme: "v1" | "v1a"; keyIndex: number } | null {
  const entries = parseSignatureHeader(header);
  let digests: Buffer[] | undefined; // one HMAC per key, computed only if a v1 entry is present
  let content: Buffer | undefined;
  for (const { version, signature } of entries) {
    if (version === "v1" && signature.length === HMAC_SHA256_BYTES) {
      digests ??= keys.map((k) => (k.scheme === "v1" ? hmac(k.hmacKey, prefix, body) : EMPTY));
      for (const [i, key] of keys.entries()) {
        // timingSafeEqual: the time taken says nothing about how many bytes matched
        if (key.scheme === "v1" && timingSafeEqual(digests[i]!, signature)) {
          return { scheme: "v1", keyIndex: key.index };
        }
      }
    } else if (version === "v1a" && signature.length === ED25519_SIGNATURE_BYTES) {
      content ??= Buffer.concat([Buffer.from(prefix, "utf8"), body]);
      for (const key of keys) {
        // a public-key check: nothing secret to leak through timing
        if (key.scheme === "v1a" && verifySignature(null, content, key.publicKey, signature)) {
          return { scheme: "v1a", keyIndex: key.index };
        }
      }
    }
  }
  return null;
}

const EMPTY = Buffer.alloc(0);

function hmac(key: Buffer, prefix: string, body: Buffer): Buffer {
  return createHmac("sha256", key).update(prefix, "utf8").update(body).digest();
}

/**
 * `v1,<b64> v1a,<b64>` entries. Repeated headers arrive joined with ", " (Node, Fetch), so a
 * trailing comma on an entry is dropped; entries that are not well-formed base64 are skipped.
 */
function parseSignatureHeader(header: string): { version: string; signature: Buffer }[] {
  const entries: { version: string; signature: Buffer }[] = [];
  for (const token of header.split(/\s+/)) {
    const entry = token.replace(/,+$/, "");
    const comma = entry.indexOf(",");
    if (comma <= 0) continue;
    const encoded = entry.slice(comma + 1);
    if (!BASE64.test(encoded) || encoded.length % 4 !== 0) continue;
    entries.push({ version: entry.slice(0, comma), signature: Buffer.from(encoded, "base64") });
  }
  return entries;
}

function noMatchDetail(keys: readonly VerificationKey[], header: string): string {
  const versions = new Set(parseSignatureHeader(header).map((e) => e.version));
  const schemes = new Set(keys.map((k) => k.scheme));
  if (versions.size === 0) return "webhook-signature holds no well-formed signature";
  if (![...schemes].some((s) => versions.has(s))) {
    const want = [...schemes].join(" or ");
    return `no ${want} signature in webhook-signature (it has ${[...versions].join(", ")}); check the key type`;
  }
  return "no signature matches the receiver's secrets (wrong secret, or the body was changed)";
}

const utf8 = new TextDecoder("utf-8", { fatal: true });

const FORM = /^application\/x-www-form-urlencoded\s*(;|$)/i;

function parseBody<T>(body: Buffer, contentType: string | undefined): T {
  if (body.length === 0) return null as T;
  let text: string;
  try {
    text = utf8.decode(body);
  } catch (err) {
    throw fail(VERIFICATION_REASONS.bodyNotJson, "the body is not UTF-8 text", err);
  }
  if (contentType !== undefined && FORM.test(contentType)) {
    // no prototype, so a field named __proto__ is a field
    const fields: Record<string, string | string[]> = Object.create(null);
    for (const [k, v] of new URLSearchParams(text)) {
      const prior = fields[k];
      fields[k] = prior === undefined ? v : Array.isArray(prior) ? [...prior, v] : [prior, v];
    }
    return fields as T;
  }
  try {
    return JSON.parse(text) as T;
  } catch (err) {
    throw fail(VERIFICATION_REASONS.bodyNotJson, "the body is not JSON (UTF-8)", err);
  }
}

const fail = (reason: WebhookVerificationError["reason"], detail: string, cause?: unknown) =>
  new WebhookVerificationError(reason, detail, cause === undefined ? undefined : { cause });
