/**
 * Ed25519 signing keys of the Standard Webhooks `v1a` scheme (docs/delivery.md, Signing):
 *
 *   whsk_<base64 of 64 bytes>  the secret key: the 32-byte seed, then the 32-byte public key
 *                              (the layout NaCl and Svix use); kept by hookrelay, sealed at
 *                              rest like every signing secret, never shown
 *   whpk_<base64 of 32 bytes>  the public key, shown to the receiver
 *
 * A bare 32-byte seed (`whsk_` + base64 of 32 bytes) is accepted too and stored in the
 * 64-byte form. node:crypto does the signing; nothing else is needed.
 */
import {
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  type KeyObject,
} from "node:crypto";
import { InvalidSecretError } from "./sign.ts";

export const ED25519_SECRET_PREFIX = "whsk_";
export const ED25519_PUBLIC_PREFIX = "whpk_";

const SEED_BYTES = 32;
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;
// PKCS#8 DER of an Ed25519 private key is this fixed header followed by the 32-byte seed.
const PKCS8_ED25519_HEADER = Buffer.from("302e020100300506032b657004220420", "hex");

/** A secret key, parsed: the key object that signs and the public key receivers hold. */
export interface Ed25519Key {
  privateKey: KeyObject;
  /** `whpk_...` */
  publicKey: string;
  /** `whsk_` + base64 of seed | public key: the form hookrelay stores */
  secret: string;
}

/** A new key pair. */
export function generateEd25519Secret(): string {
  const { privateKey } = generateKeyPairSync("ed25519");
  return ed25519Key(seedOf(privateKey)).secret;
}

/** Parses `whsk_...`; throws InvalidSecretError for anything else. */
export function parseEd25519Secret(secret: string): Ed25519Key {
  if (!secret.startsWith(ED25519_SECRET_PREFIX)) {
    throw new InvalidSecretError("an Ed25519 secret key must start with whsk_");
  }
  const encoded = secret.slice(ED25519_SECRET_PREFIX.length);
  if (!BASE64.test(encoded) || encoded.length % 4 !== 0) {
    throw new InvalidSecretError("an Ed25519 secret key must be whsk_ followed by standard base64");
  }
  const raw = Buffer.from(encoded, "base64");
  if (raw.length !== SEED_BYTES && raw.length !== 2 * SEED_BYTES) {
    throw new InvalidSecretError(
      `an Ed25519 secret key must decode to 64 bytes (seed and public key) or a 32-byte seed, got ${raw.length}`,
    );
  }
  const key = ed25519Key(raw.subarray(0, SEED_BYTES));
  if (raw.length === 2 * SEED_BYTES) {
    const given = raw.subarray(SEED_BYTES).toString("base64");
    if (`${ED25519_PUBLIC_PREFIX}${given}` !== key.publicKey) {
      throw new InvalidSecretError(
        "the last 32 bytes of the Ed25519 secret key are not the public key of its seed",
      );
    }
  }
  return key;
}

/** The public key (`whpk_...`) of a `whsk_...` secret key. */
export function ed25519PublicKey(secret: string): string {
  return parseEd25519Secret(secret).publicKey;
}

function ed25519Key(seed: Buffer): Ed25519Key {
  const privateKey = createPrivateKey({
    key: Buffer.concat([PKCS8_ED25519_HEADER, seed]),
    format: "der",
    type: "pkcs8",
  });
  const publicRaw = rawPublicKey(createPublicKey(privateKey));
  return {
    privateKey,
    publicKey: ED25519_PUBLIC_PREFIX + publicRaw.toString("base64"),
    secret: ED25519_SECRET_PREFIX + Buffer.concat([seed, publicRaw]).toString("base64"),
  };
}

function seedOf(privateKey: KeyObject): Buffer {
  const der = privateKey.export({ format: "der", type: "pkcs8" });
  return der.subarray(der.length - SEED_BYTES);
}

function rawPublicKey(publicKey: KeyObject): Buffer {
  const { x } = publicKey.export({ format: "jwk" });
  return Buffer.from(x!, "base64url");
}
