/**
 * An endpoint's egress fields as requests and answers carry them (docs/egress.md):
 * `egressPool` (a pool of the server's HOOKRELAY_EGRESS_POOLS), `proxyUrl` (its password
 * sealed at rest, answered as `***`; a `***` sent back keeps the stored one), and mTLS:
 * `tlsClientCert` and `tlsClientKey` (both sealed, answered as `***`, given together) and
 * `tlsCa` (the receiver's CA bundle, answered as it is). Everything is checked when saved:
 * a proxy URL's scheme and host, a pool's name, a certificate that parses, is current and
 * matches its key. A PUT that leaves them out keeps them, like the URL token.
 */
import { createPrivateKey, X509Certificate } from "node:crypto";
import type { EgressConfig } from "../config.ts";
import type { EndpointFields, EndpointRow } from "../db/queries/endpoints.ts";
import { maskedProxyUrl, parseProxyUrl } from "../delivery/egress/proxy-tunnel.ts";
import { MASK } from "../security/redact.ts";
import type { SecretBox } from "../security/secret-box.ts";
import { apiError, validationError } from "./errors.ts";

export interface EgressIn {
  egressPool?: string | null;
  proxyUrl?: string | null;
  tlsClientCert?: string | null;
  tlsClientKey?: string | null;
  tlsCa?: string | null;
}

const pem = (description: string) =>
  ({ type: ["string", "null"], minLength: 1, maxLength: 65_536, description }) as const;

export const egressPoolSchema = {
  type: ["string", "null"],
  minLength: 1,
  maxLength: 64,
  description:
    "a named egress pool of the server's HOOKRELAY_EGRESS_POOLS (GET /api/v1/egress lists them and their public IPs); null: none (docs/egress.md)",
} as const;

export const egressProperties = {
  egressPool: {
    ...egressPoolSchema,
    description: `${egressPoolSchema.description}. The endpoint's wins over its application's; a proxyUrl wins over both.`,
  },
  proxyUrl: {
    type: ["string", "null"],
    minLength: 1,
    maxLength: 2048,
    description:
      "the endpoint's own forward proxy: http://, https:// (CONNECT) or socks5:// [user:password@]host[:port]. Its password is sealed at rest and answered as ***; sending *** back keeps it. The proxy must pass the SSRF guard like a receiver.",
  },
  tlsClientCert: pem(
    "mTLS: the client certificate (PEM, with its chain if any), given with tlsClientKey; sealed at rest, answered as ***. A certificate past its end date is refused.",
  ),
  tlsClientKey: pem(
    "mTLS: the client certificate's private key (unencrypted PEM), given with tlsClientCert; sealed at rest, answered as ***",
  ),
  tlsCa: pem(
    "the CA certificates (PEM) the receiver's certificate must chain to, instead of the system's",
  ),
} as const;

/** The egress fields an endpoint answers with. */
export const egressResponseProperties = {
  egressPool: { type: ["string", "null"] },
  proxyUrl: { type: ["string", "null"] },
  tlsClientCert: { type: ["string", "null"] },
  tlsClientKey: { type: ["string", "null"] },
  tlsCa: { type: ["string", "null"] },
} as const;

/** The egress columns of an answer's row (db/queries/endpoints.ts selects them). */
export interface EgressRow {
  egress_pool: string | null;
  proxy_url: string | null;
  has_proxy_secret: boolean;
  has_tls_client_cert: boolean;
  tls_ca: string | null;
}

/**
 * The columns a body's egress fields write, checked, sealed where they are secrets; a
 * proxy password or certificate of `***` keeps the stored one (`current`).
 */
export function egressColumns(
  body: EgressIn,
  current: (EndpointRow & EgressRow) | null,
  egress: EgressConfig,
  box: SecretBox,
): Partial<EndpointFields> {
  const cols: Partial<EndpointFields> = {};
  if (body.egressPool !== undefined) cols.egress_pool = checkPool(body.egressPool, egress);
  if (body.proxyUrl !== undefined) Object.assign(cols, proxyColumns(body.proxyUrl, current, box));
  if (body.tlsClientCert !== undefined || body.tlsClientKey !== undefined) {
    const cert = body.tlsClientCert;
    const key = body.tlsClientKey;
    if (cert === MASK && key === MASK && current?.has_tls_client_cert) {
      // both kept
    } else if ((cert ?? null) === null && (key ?? null) === null) {
      cols.tls_client_cert = null;
      cols.tls_client_key = null;
    } else if (typeof cert !== "string" || typeof key !== "string") {
      throw apiError(
        "invalid_certificate",
        "tlsClientCert and tlsClientKey go together: give both (or null both to remove them)",
      );
    } else {
      checkClientCertificate(cert, key);
      cols.tls_client_cert = box.seal(cert);
      cols.tls_client_key = box.seal(key);
    }
  }
  if (body.tlsCa !== undefined) {
    if (body.tlsCa !== null) checkCaBundle(body.tlsCa);
    cols.tls_ca = body.tlsCa;
  }
  return cols;
}

/** A pool name the server configures, or a 422 naming the ones it does. */
export function checkPool(pool: string | null, egress: EgressConfig): string | null {
  if (pool === null || egress.pools[pool] !== undefined) return pool;
  const known = Object.keys(egress.pools);
  throw apiError(
    "unknown_egress_pool",
    `egressPool ${JSON.stringify(pool)} is not configured on this server (${known.length > 0 ? `its pools: ${known.join(", ")}` : "it has no egress pools: HOOKRELAY_EGRESS_POOLS"})`,
  );
}

function proxyColumns(
  raw: string | null,
  current: EgressRow | null,
  box: SecretBox,
): Partial<EndpointFields> {
  if (raw === null) return { proxy_url: null, proxy_secret: null };
  try {
    parseProxyUrl(raw);
  } catch (err) {
    throw apiError("invalid_proxy_url", `proxyUrl ${(err as Error).message}`, { cause: err });
  }
  const url = new URL(raw);
  const password = decodeURIComponent(url.password);
  url.password = "";
  const stored = url.toString().replace(/\/$/, "");
  if (password === MASK) {
    if (!current?.has_proxy_secret)
      throw validationError(
        `proxyUrl's password "${MASK}" is how answers mask it, and this endpoint keeps none: send the password itself`,
      );
    return { proxy_url: stored };
  }
  return { proxy_url: stored, proxy_secret: password === "" ? null : box.seal(password) };
}

/** The proxy URL a body gives, for the SSRF guard's save-time check of its host; null: none. */
export function proxyHostToCheck(body: EgressIn): string | null {
  if (typeof body.proxyUrl !== "string") return null;
  return parseProxyUrl(body.proxyUrl).host;
}

/** Refuses a certificate that does not parse, is not current, or is not `key`'s. */
export function checkClientCertificate(certPem: string, keyPem: string, now = new Date()): void {
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(certPem);
  } catch (err) {
    throw apiError("invalid_certificate", "tlsClientCert is not a PEM certificate that parses", {
      cause: err,
    });
  }
  let key: ReturnType<typeof createPrivateKey>;
  try {
    key = createPrivateKey(keyPem);
  } catch (err) {
    throw apiError(
      "invalid_certificate",
      "tlsClientKey is not an unencrypted PEM private key that parses (it is sealed at rest: give it without a passphrase)",
      { cause: err },
    );
  }
  if (!cert.checkPrivateKey(key))
    throw apiError("certificate_key_mismatch", "tlsClientKey is not the key of tlsClientCert");
  const from = new Date(cert.validFrom);
  const to = new Date(cert.validTo);
  if (to <= now)
    throw apiError("certificate_expired", `tlsClientCert expired on ${to.toISOString()}`);
  if (from > now)
    throw apiError(
      "certificate_expired",
      `tlsClientCert is not valid before ${from.toISOString()}`,
    );
}

/** Refuses a CA bundle with no certificate, or one block that does not parse. */
export function checkCaBundle(bundle: string): void {
  const blocks = bundle.match(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g);
  if (!blocks)
    throw apiError(
      "invalid_certificate",
      "tlsCa holds no PEM certificate (-----BEGIN CERTIFICATE-----)",
    );
  for (const [i, block] of blocks.entries()) {
    try {
      new X509Certificate(block);
    } catch (err) {
      throw apiError("invalid_certificate", `tlsCa's certificate ${i + 1} does not parse`, {
        cause: err,
      });
    }
  }
}

/** The egress fields of an answer: secrets as `***`, the proxy's password masked. */
export const egressOut = (r: EgressRow) => ({
  egressPool: r.egress_pool,
  proxyUrl:
    r.proxy_url === null
      ? null
      : r.has_proxy_secret
        ? maskedProxyUrl(withMask(r.proxy_url))
        : r.proxy_url,
  tlsClientCert: r.has_tls_client_cert ? MASK : null,
  tlsClientKey: r.has_tls_client_cert ? MASK : null,
  tlsCa: r.tls_ca,
});

function withMask(url: string): string {
  const parsed = new URL(url);
  parsed.password = "x";
  return parsed.toString();
}
