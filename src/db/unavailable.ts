/**
 * Tells a database that cannot be reached right now (down, restarting, failing over, out
 * of connections) from a statement that failed on its own merits. The first is worth
 * retrying later and is answered 503 with Retry-After by the API; the second is a bug or
 * bad input (docs/reliability.md).
 */

/** Node socket errors of a connection that could not be made or was cut. */
const SOCKET_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ECONNABORTED",
  "ETIMEDOUT",
  "EPIPE",
  "EHOSTUNREACH",
  "EHOSTDOWN",
  "ENETUNREACH",
  "ENETDOWN",
  // a failover that moves a DNS name can leave it unresolvable for a moment
  "EAI_AGAIN",
  "ENOTFOUND",
]);

/** SQLSTATEs of a server that is going away, not back yet, or no longer the primary. */
const SQLSTATES = new Set([
  "57P01", // admin_shutdown: a fast or smart shutdown ended the session
  "57P02", // crash_shutdown: another backend crashed, every session is ended
  "57P03", // cannot_connect_now: starting up, shutting down, or in recovery
  "53300", // too_many_connections: every client reconnecting at once after a restart
  "25006", // read_only_sql_transaction: connected to a server that is now a standby
]);

/** pg's own errors for a connection that is gone or never came (they carry no code). */
const DRIVER_MESSAGES = [
  /^Connection terminated/,
  /not queryable/,
  /timeout exceeded when trying to connect/,
  /^Query read timeout/,
];

/**
 * True for the error Node's HTTP server gives a request whose client hung up before sending
 * all of its body: ECONNRESET with the message "aborted" and no syscall. It says nothing about
 * the database (pg's socket errors name their syscall: "read ECONNRESET").
 */
export function isClientAbort(err: unknown): boolean {
  if (!err || typeof err !== "object") return false;
  const { code, message, syscall } = err as {
    code?: unknown;
    message?: unknown;
    syscall?: unknown;
  };
  return code === "ECONNRESET" && message === "aborted" && syscall === undefined;
}

/** True when `err` (or what it wraps) says the database is unreachable for now. */
export function isDatabaseUnavailable(err: unknown, depth = 0): boolean {
  if (!err || typeof err !== "object" || depth > 5) return false;
  // a client that hung up on the API, not a connection to the database that was cut
  if (isClientAbort(err)) return false;
  const { code, message, cause, errors } = err as {
    code?: unknown;
    message?: unknown;
    cause?: unknown;
    errors?: unknown;
  };
  if (typeof code === "string") {
    if (SOCKET_CODES.has(code) || SQLSTATES.has(code)) return true;
    // class 08: connection exception
    if (/^08[0-9A-Z]{3}$/.test(code)) return true;
  }
  if (typeof message === "string" && DRIVER_MESSAGES.some((re) => re.test(message))) return true;
  // Node's connect tries every address of a name and reports an AggregateError
  if (Array.isArray(errors) && errors.some((e) => isDatabaseUnavailable(e, depth + 1))) return true;
  return isDatabaseUnavailable(cause, depth + 1);
}
