/**
 * Which of an endpoint's custom headers are secret, and their values masked for display
 * (GET .../endpoint/{ep}/headers, the CLI and the dashboard; docs/delivery.md, Custom
 * headers). A header is sensitive when any of these holds (names compared
 * case-insensitively, `-` and `_` ignored):
 *
 * - it is on Svix's list: Authorization, Proxy-Authorization, WWW-Authenticate,
 *   Proxy-Authenticate, X-Auth-Token; or it is Cookie;
 * - its name contains a word that names a credential: auth, token, secret, key, password,
 *   passwd, cookie, session, credential, signature, apikey (X-Api-Key, X-Access-Token,
 *   X-Shopify-Hmac-Signature, ...): masking a harmless header costs a reader little,
 *   showing a credential costs much more;
 * - the redaction list (HOOKRELAY_SENSITIVE_FIELDS, security/redact.ts) names it.
 *
 * Svix leaves sensitive headers out of `headers` and names them in `sensitive`; hookrelay
 * names them there too and keeps them in `headers` with the value MASK, so a reader sees
 * that they are set. A PUT or PATCH that sends MASK back for a header that is stored keeps
 * the stored value (api/routes/endpoint-headers.ts), so a read-modify-write round trip
 * never replaces a credential with the mask.
 */
import { MASK } from "./redact.ts";

const SVIX_SENSITIVE = new Set([
  "authorization",
  "proxyauthorization",
  "wwwauthenticate",
  "proxyauthenticate",
  "xauthtoken",
  "cookie",
]);

const CREDENTIAL_WORDS = [
  "auth",
  "token",
  "secret",
  "key",
  "password",
  "passwd",
  "cookie",
  "session",
  "credential",
  "signature",
] as const;

const normalize = (name: string) => name.toLowerCase().replace(/[-_]/g, "");

/** True when the header's value is a secret (see above); `isSensitiveField` is the redactor's. */
export function isSensitiveHeader(
  name: string,
  isSensitiveField: (name: string) => boolean = () => false,
): boolean {
  const n = normalize(name);
  return (
    SVIX_SENSITIVE.has(n) || CREDENTIAL_WORDS.some((w) => n.includes(w)) || isSensitiveField(name)
  );
}

/** Svix's EndpointHeadersOut: every header, sensitive values replaced by MASK and named. */
export function maskedHeaders(
  headers: Record<string, string>,
  isSensitiveField?: (name: string) => boolean,
): { headers: Record<string, string>; sensitive: string[] } {
  const shown: Record<string, string> = {};
  const sensitive: string[] = [];
  for (const [name, value] of Object.entries(headers)) {
    if (isSensitiveHeader(name, isSensitiveField)) {
      shown[name] = MASK;
      sensitive.push(name);
    } else {
      shown[name] = value;
    }
  }
  return { headers: shown, sensitive };
}
