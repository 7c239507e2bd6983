/**
 * Connection failures caused by TLS, told as one sentence that names the setting to fix
 * (docs/database.md, "TLS"). They are ConfigErrors: a wrong CA or host name does not heal
 * by waiting, so the start-up wait (runtime.ts) fails at once instead of retrying, and
 * db/unavailable.ts never takes them for an unreachable database. The original error is
 * kept as `cause`.
 */
import { ConfigError } from "../errors.ts";
import type { ResolvedTls } from "./tls.ts";

/** Node's (OpenSSL's) codes for a chain that does not lead to a trusted CA. */
const UNTRUSTED_CHAIN = new Set([
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "UNABLE_TO_GET_ISSUER_CERT",
  "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
  "SELF_SIGNED_CERT_IN_CHAIN",
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "CERT_SIGNATURE_FAILURE",
  "CERT_UNTRUSTED",
  "CERT_REJECTED",
]);

/** ...and for a certificate outside its validity period. */
const OUT_OF_DATE: Record<string, string> = {
  CERT_HAS_EXPIRED: "has expired",
  CERT_NOT_YET_VALID: "is not valid yet",
};

const CERT_HINT =
  "HOOKRELAY_DB_SSLCERT and HOOKRELAY_DB_SSLKEY (or sslcert and sslkey in the connection string)";
const MODE_HINT = "HOOKRELAY_DB_SSLMODE (or sslmode in the connection string)";

/** The sentence for `err`, or null when it is not a TLS matter. */
function sentence(err: unknown, tls: ResolvedTls): string | null {
  if (!err || typeof err !== "object") return null;
  const { code, message, reason } = err as { code?: unknown; message?: unknown; reason?: unknown };
  const text = typeof message === "string" ? message : "";
  const where = `the database at ${tls.target}`;
  const { sslmode, sslrootcert, sslcert } = tls.given;
  const mode = sslmode ? `sslmode=${tls.mode} (from ${sslmode.source})` : `sslmode=${tls.mode}`;
  const ca =
    sslrootcert && sslrootcert.value !== "system"
      ? `the CA in ${sslrootcert.source}`
      : "any CA Node.js trusts (its public list: no sslrootcert is given)";

  if (typeof code === "string" && UNTRUSTED_CHAIN.has(code))
    return (
      `the certificate of ${where} is not signed by ${ca} (${text}): ` +
      (sslrootcert && sslrootcert.value !== "system"
        ? "point it at the CA file your provider publishes for this database"
        : `set ${"HOOKRELAY_DB_SSLROOTCERT"} (or sslrootcert in the connection string) to the CA file your provider publishes`)
    );
  if (typeof code === "string" && code in OUT_OF_DATE)
    return `the certificate of ${where} ${OUT_OF_DATE[code]} (checked because of ${mode}): the server needs a current certificate`;
  if (code === "ERR_TLS_CERT_ALTNAME_INVALID") {
    const host = (err as { host?: unknown }).host;
    const names = (err as { cert?: { subjectaltname?: unknown } }).cert?.subjectaltname;
    return (
      `the certificate of ${where} does not name the host "${String(host)}"` +
      `${typeof names === "string" ? ` (it names ${names})` : ""}, and ${mode} checks the host name: ` +
      "connect with a host name the certificate names, or use sslmode=verify-ca to check the CA only"
    );
  }
  if (text === "The server does not support SSL connections")
    return (
      `${where} does not accept TLS, but ${mode} asks for it` +
      `${tls.given.sslmode?.value === "prefer" ? " (hookrelay never falls back to an unencrypted connection)" : ""}: ` +
      `turn TLS on at the server, or set ${MODE_HINT} to disable`
    );
  if (code === "28000" && /requires a valid client certificate/.test(text))
    return sslcert
      ? `${where} did not take the client certificate in ${sslcert.source}: ${text}`
      : `${where} accepts this role with a client certificate only (${text}): set ${CERT_HINT}`;
  if (code === "28000" && /certificate authentication failed/.test(text))
    return `${where} refused the client certificate in ${sslcert?.source ?? "sslcert"} for this role (${text}): its common name (CN) must be the role's name`;
  if (code === "28000" && tls.mode === "disable" && /no encryption|SSL off/.test(text))
    return `${where} refuses unencrypted connections (${text}): set ${MODE_HINT} to require, verify-ca or verify-full`;
  // The server ended the handshake with an alert: it did not take our certificate (or its lack).
  if (typeof code === "string" && /^ERR_SSL_.*ALERT/.test(code)) {
    const why = typeof reason === "string" ? reason : code;
    return sslcert
      ? `${where} refused the client certificate in ${sslcert.source} during the TLS handshake (${why}): use a certificate signed by the CA the server trusts (its ssl_ca_file)`
      : `${where} refused the TLS handshake (${why}): it may want a client certificate, set ${CERT_HINT}`;
  }
  return null;
}

/** `err` as a ConfigError naming the setting to fix when TLS caused it; otherwise `err`. */
export function explainTlsFailure(err: unknown, tls: ResolvedTls): unknown {
  if (err instanceof ConfigError) return err;
  const text = sentence(err, tls);
  return text === null ? err : new ConfigError(text, { cause: err });
}
