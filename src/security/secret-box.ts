/**
 * Encryption at rest for signing secrets (docs/security.md, Signing secrets at rest): AES-256-GCM from node:crypto.
 *
 *   stored = "enc:v1:" + keyId + ":" + base64(iv[12] | tag[16] | ciphertext)
 *
 * keyId (8 hex characters of SHA-256 of the key) says which key sealed a value, so keys can
 * be rotated: HOOKRELAY_ENCRYPTION_KEY seals, it and HOOKRELAY_ENCRYPTION_KEY_PREVIOUS
 * (comma-separated) open, and `hookrelay secrets reencrypt` rewrites every row under the
 * current key. Without a key, secrets are stored as they are (a warning at start says so)
 * and sealed values cannot be opened (an error names the missing key).
 *
 * A key is 32 bytes given as base64 (openssl rand -base64 32) or 64 hex characters.
 */
import { createCipheriv, createDecipheriv, createHash, randomBytes } from "node:crypto";
import { ConfigError, HookRelayError } from "../errors.ts";

const PREFIX = "enc:v1:";

export interface SecretBox {
  /** true when values are sealed on write */
  readonly encrypting: boolean;
  seal(plain: string): string;
  /** opens a sealed value; passes a plain one through */
  open(stored: string): string;
  /** true when `stored` is plain or sealed under an older key */
  needsReseal(stored: string): boolean;
}

function parseKey(text: string, name: string): Buffer {
  const t = text.trim();
  const key = /^[0-9a-fA-F]{64}$/.test(t) ? Buffer.from(t, "hex") : Buffer.from(t, "base64");
  if (key.length !== 32) {
    throw new ConfigError(
      `${name} must be 32 bytes as base64 or 64 hex characters (e.g. openssl rand -base64 32)`,
    );
  }
  return key;
}

const keyIdOf = (key: Buffer) => createHash("sha256").update(key).digest("hex").slice(0, 8);

export function makeSecretBox(
  current: string | undefined,
  previous: readonly string[] = [],
): SecretBox {
  const keys = new Map<string, Buffer>();
  let currentId: string | null = null;
  if (current) {
    const key = parseKey(current, "HOOKRELAY_ENCRYPTION_KEY");
    currentId = keyIdOf(key);
    keys.set(currentId, key);
  }
  for (const p of previous) {
    const key = parseKey(p, "HOOKRELAY_ENCRYPTION_KEY_PREVIOUS");
    keys.set(keyIdOf(key), key);
  }
  return {
    encrypting: currentId !== null,
    seal(plain) {
      if (currentId === null) return plain;
      const iv = randomBytes(12);
      const cipher = createCipheriv("aes-256-gcm", keys.get(currentId)!, iv);
      const body = Buffer.concat([cipher.update(plain, "utf8"), cipher.final()]);
      return `${PREFIX}${currentId}:${Buffer.concat([iv, cipher.getAuthTag(), body]).toString("base64")}`;
    },
    open(stored) {
      if (!stored.startsWith(PREFIX)) return stored;
      const [keyId, data] = stored.slice(PREFIX.length).split(":");
      const key = keyId ? keys.get(keyId) : undefined;
      if (!key || !data) {
        throw new HookRelayError(
          "encryption_key_missing",
          `a secret is sealed under key ${keyId}, which is neither HOOKRELAY_ENCRYPTION_KEY nor in HOOKRELAY_ENCRYPTION_KEY_PREVIOUS`,
        );
      }
      const raw = Buffer.from(data, "base64");
      const decipher = createDecipheriv("aes-256-gcm", key, raw.subarray(0, 12));
      decipher.setAuthTag(raw.subarray(12, 28));
      return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString("utf8");
    },
    needsReseal(stored) {
      if (currentId === null) return stored.startsWith(PREFIX);
      return !stored.startsWith(`${PREFIX}${currentId}:`);
    },
  };
}
