/**
 * API key format: `hr_<kind>_<32 base62 random><6 base62 checksum>`, e.g.
 * `hr_admin_4fQ...Zk2x9a`. The prefix makes a leaked key recognisable (secret scanners,
 * log review); the checksum (CRC-32 of everything before it) catches typos and junk before
 * any database lookup. Only the SHA-256 of a key is stored.
 */
import { randomInt } from "node:crypto";
import { crc32 } from "node:zlib";

const ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
const RANDOM_LENGTH = 32; // 62^32 ≈ 2^190
const CHECKSUM_LENGTH = 6; // 62^6 > 2^32
export const KEY_KINDS = ["admin", "app"] as const;
export type KeyKind = (typeof KEY_KINDS)[number];

const KEY_PATTERN = new RegExp(
  `^hr_(${KEY_KINDS.join("|")})_([0-9A-Za-z]{${RANDOM_LENGTH + CHECKSUM_LENGTH}})$`,
);

function checksum(body: string): string {
  let n = crc32(body);
  let out = "";
  for (let i = 0; i < CHECKSUM_LENGTH; i++) {
    out = ALPHABET[n % 62] + out;
    n = Math.floor(n / 62);
  }
  return out;
}

/** A new random key of this kind. */
export function generateApiKey(kind: KeyKind): string {
  let random = "";
  for (let i = 0; i < RANDOM_LENGTH; i++) random += ALPHABET[randomInt(62)];
  const body = `hr_${kind}_${random}`;
  return body + checksum(body);
}

/** The kind of a well-formed key with a valid checksum, or null. */
export function checkApiKey(key: string): KeyKind | null {
  const m = KEY_PATTERN.exec(key);
  if (!m) return null;
  const body = key.slice(0, key.length - CHECKSUM_LENGTH);
  return checksum(body) === key.slice(-CHECKSUM_LENGTH) ? (m[1] as KeyKind) : null;
}
