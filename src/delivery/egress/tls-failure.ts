/**
 * Which connection errors are TLS failures (error kind `tls`, docs/egress.md), and the
 * sentence an attempt row shows for one: the receiver's certificate did not verify, or the
 * receiver refused ours (mTLS), or the handshake itself failed.
 */
import { TLSSocket } from "node:tls";
import type { buildConnector } from "undici";

/** OpenSSL's certificate verification codes, as Node reports them in `err.code`. */
const VERIFY_CODES: ReadonlySet<string> = new Set([
  "CERT_HAS_EXPIRED",
  "CERT_NOT_YET_VALID",
  "CERT_REVOKED",
  "CERT_UNTRUSTED",
  "CERT_REJECTED",
  "CERT_SIGNATURE_FAILURE",
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "SELF_SIGNED_CERT_IN_CHAIN",
  "UNABLE_TO_GET_ISSUER_CERT",
  "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "HOSTNAME_MISMATCH",
  "ERR_TLS_CERT_ALTNAME_INVALID",
]);

/** A TLS failure's code anywhere in a short `cause` chain, or null when it is none. */
export function tlsFailureCode(err: unknown): string | null {
  for (let e = err, depth = 0; e && typeof e === "object" && depth < 5; depth++) {
    const { code, library, cause } = e as { code?: unknown; library?: unknown; cause?: unknown };
    if (typeof code === "string") {
      if (VERIFY_CODES.has(code) || code.startsWith("ERR_SSL_") || code.startsWith("ERR_TLS_"))
        return code;
    }
    if (library === "SSL routines") return typeof code === "string" ? code : "SSL";
    e = cause;
  }
  return null;
}

/** The sentence for a TLS failure of code `code`; `peer` names the other end. */
export function tlsFailureMessage(code: string, message: string, peer = "receiver"): string {
  const why = (
    code === "CERT_HAS_EXPIRED"
      ? "the receiver's certificate has expired"
      : code === "ERR_TLS_CERT_ALTNAME_INVALID" || code === "HOSTNAME_MISMATCH"
        ? "the receiver's certificate does not name its host"
        : VERIFY_CODES.has(code)
          ? "the receiver's certificate is not trusted (an endpoint's tlsCa can name its CA)"
          : /CERTIFICATE_REQUIRED|HANDSHAKE_FAILURE|BAD_CERTIFICATE|UNKNOWN_CA|CERTIFICATE_UNKNOWN/i.test(
                code,
              )
            ? "the receiver refused the handshake (it may require a client certificate, or not trust ours)"
            : "the TLS handshake failed"
  ).replace("receiver", peer);
  return `TLS failed (${code}): ${why}: ${message}`;
}

/**
 * Wraps a connector so a TLS failure the receiver reports after the handshake (TLS 1.3
 * sends "certificate required" or "unknown CA" only once ours is read) stays the cause of
 * the error the request fails with: undici's parser sees the socket end and reports "other
 * side closed", so the alert read just before is hung on that error as its `cause`.
 */
export function keepingTlsAlerts(inner: buildConnector.connector): buildConnector.connector {
  return (options, callback) =>
    inner(options, (err, socket) => {
      if (socket instanceof TLSSocket) {
        let alert: Error | undefined;
        socket.once("error", (e: Error) => {
          alert ??= e;
        });
        const destroy = socket.destroy;
        socket.destroy = function (this: TLSSocket, error?: Error) {
          if (error && alert && error !== alert && error.cause === undefined) error.cause = alert;
          return destroy.call(this, error);
        };
      }
      if (err) callback(err, null);
      else callback(null, socket!);
    });
}
