/**
 * A stored signing secret, opened, turned into the key that signs (docs/delivery.md,
 * Signing): its prefix says the scheme. `whsec_` (or bare base64, as Svix accepts) is an
 * HMAC secret (`v1`), `whsk_` an Ed25519 secret key (`v1a`).
 */
import { ED25519_SECRET_PREFIX, parseEd25519Secret } from "./ed25519-keys.ts";
import { type SigningKey, secretKey } from "./sign.ts";

export const SignatureScheme = { hmac: "v1", ed25519: "v1a" } as const;
export type SignatureScheme = (typeof SignatureScheme)[keyof typeof SignatureScheme];

/** The scheme of a secret, by its prefix. */
export const schemeOf = (secret: string): SignatureScheme =>
  secret.startsWith(ED25519_SECRET_PREFIX) ? SignatureScheme.ed25519 : SignatureScheme.hmac;

/** The key a secret signs with; throws InvalidSecretError when it is malformed. */
export function signingKeyOf(secret: string): SigningKey {
  return schemeOf(secret) === SignatureScheme.ed25519
    ? parseEd25519Secret(secret).privateKey
    : secretKey(secret);
}
