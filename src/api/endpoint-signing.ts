/**
 * How an endpoint signs (docs/delivery.md, Signing): HMAC (`v1`, `whsec_` secrets), Ed25519
 * (`v1a`, `whsk_` secret keys whose `whpk_` public key the receiver holds), or both. The
 * request fields and checks of endpoint create/update and secret rotation, turning them
 * into the keys to store (db/queries/endpoint-secrets.ts).
 *
 *   signatureScheme  "v1" | "v1a" | "v1+v1a"; on create (default "v1", or the scheme of the
 *                    given secret) and on PUT/PATCH: a scheme added gets a new key, a scheme
 *                    dropped keeps signing for the default grace period (24 h)
 *   secret           on create: a whsec_ (or bare base64) or whsk_ key, used as given
 *
 * The whsk_ secret key is never shown: GET .../secret answers the whpk_ public key.
 */
import type { CurrentSecret, NewSecret } from "../db/queries/endpoint-secrets.ts";
import {
  ED25519_SECRET_PREFIX,
  ed25519PublicKey,
  generateEd25519Secret,
  parseEd25519Secret,
} from "../delivery/ed25519-keys.ts";
import { generateSecret, InvalidSecretError } from "../delivery/sign.ts";
import { SignatureScheme, schemeOf } from "../delivery/signing-key.ts";
import type { SecretBox } from "../security/secret-box.ts";
import { checkSecret } from "./endpoint-input.ts";
import { validationError } from "./errors.ts";

export const SIGNATURE_SCHEMES = ["v1", "v1a", "v1+v1a"] as const;
export type SignatureSchemeChoice = (typeof SIGNATURE_SCHEMES)[number];

/** Old keys keep signing this long after a change of scheme (as after a rotation). */
export const DEFAULT_GRACE_SECONDS = 86_400;

/** The endpoint body's signing field (its own block, beside the endpoint's other fields). */
export const signingProperties = {
  signatureScheme: { type: "string", enum: SIGNATURE_SCHEMES },
} as const;

export type SigningIn = { signatureScheme?: SignatureSchemeChoice };

/** An endpoint body schema with the signing field added. */
export const withSigningFields = <S extends { properties: object }>(schema: S) => ({
  ...schema,
  properties: { ...schema.properties, ...signingProperties },
});

const schemesOf = (choice: SignatureSchemeChoice): SignatureScheme[] =>
  choice.split("+") as SignatureScheme[];

/** A key given by a request, checked; an Ed25519 seed comes back in the 64-byte form. */
export function checkSigningSecret(secret: string): string {
  if (!secret.startsWith(ED25519_SECRET_PREFIX)) return checkSecret(secret);
  try {
    return parseEd25519Secret(secret).secret;
  } catch (err) {
    if (err instanceof InvalidSecretError) throw validationError(err.message, { cause: err });
    throw err;
  }
}

/** A plain key, sealed, ready to store. */
export function toNewSecret(box: SecretBox, plain: string): NewSecret {
  const scheme = schemeOf(plain);
  return {
    sealed: box.seal(plain),
    scheme,
    publicKey: scheme === SignatureScheme.ed25519 ? ed25519PublicKey(plain) : null,
  };
}

const generate = (scheme: SignatureScheme) =>
  scheme === SignatureScheme.ed25519 ? generateEd25519Secret() : generateSecret();

/**
 * The keys for `schemes`: `given` (already checked) for its own scheme, new ones for the
 * others. A given key of a scheme not chosen is a 422.
 */
function keysFor(
  box: SecretBox,
  schemes: readonly SignatureScheme[],
  given: string | null,
): NewSecret[] {
  if (given !== null && !schemes.includes(schemeOf(given))) {
    throw validationError(
      `the key is a ${schemeOf(given)} key (${given.startsWith(ED25519_SECRET_PREFIX) ? "whsk_" : "whsec_"}), but signatureScheme is ${schemes.join("+")}`,
    );
  }
  return schemes.map((scheme) =>
    toNewSecret(box, given !== null && schemeOf(given) === scheme ? given : generate(scheme)),
  );
}

/** The first keys of a new endpoint. */
export function keysForCreate(
  box: SecretBox,
  body: SigningIn & { secret?: string | null },
): NewSecret[] {
  const given = body.secret ? checkSigningSecret(body.secret) : null;
  const choice =
    body.signatureScheme ?? (given ? (schemeOf(given) as SignatureSchemeChoice) : "v1");
  return keysFor(box, schemesOf(choice), given);
}

/** A change of scheme on PUT/PATCH: new keys for schemes added, the dropped ones retired. */
export function schemeChange(
  box: SecretBox,
  current: readonly CurrentSecret[],
  choice: SignatureSchemeChoice,
): { added: NewSecret[]; retire: SignatureScheme[]; graceSeconds: number } {
  const want = schemesOf(choice);
  const have = new Set(current.map((c) => c.scheme));
  return {
    added: keysFor(
      box,
      want.filter((s) => !have.has(s)),
      null,
    ),
    retire: [...have].filter((s) => !want.includes(s)),
    graceSeconds: DEFAULT_GRACE_SECONDS,
  };
}

/**
 * A rotation: the new key set (the key given, or new keys of `scheme`, by default of the
 * schemes the endpoint signs with now) replaces every current key, which keeps signing for
 * the grace period.
 */
export function rotation(
  box: SecretBox,
  current: readonly CurrentSecret[],
  body: { key?: string | null; scheme?: SignatureSchemeChoice | null },
): { added: NewSecret[]; retire: SignatureScheme[] } {
  const given = body.key ? checkSigningSecret(body.key) : null;
  const now = current.map((c) => c.scheme);
  const schemes = body.scheme
    ? schemesOf(body.scheme)
    : given
      ? [schemeOf(given)]
      : now.length > 0
        ? now
        : [SignatureScheme.hmac];
  return {
    added: keysFor(box, schemes, given),
    retire: [SignatureScheme.hmac, SignatureScheme.ed25519],
  };
}

/**
 * GET .../secret: `key` is the HMAC secret when the endpoint signs with one (Svix's field),
 * else the Ed25519 public key; `publicKey` is the whpk_ whenever it signs with Ed25519.
 */
export function secretOut(box: SecretBox, current: readonly CurrentSecret[]) {
  const hmac = current.find((c) => c.scheme === SignatureScheme.hmac);
  const ed = current.find((c) => c.scheme === SignatureScheme.ed25519);
  return {
    key: hmac ? box.open(hmac.secret) : ed!.public_key!,
    publicKey: ed?.public_key ?? null,
    signatureScheme: current.map((c) => c.scheme).join("+"),
  };
}
