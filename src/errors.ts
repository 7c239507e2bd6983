/**
 * hookrelay's one error vocabulary: a base class with a stable `code`, and the registry of
 * every code (snake_case, as in Svix's API). Wrapped errors keep their `cause`.
 *
 * The HTTP API answers with the codes of the first group, each with the one status that
 * api/errors.ts gives it ({ code, detail } bodies, docs/errors.md). The library, the
 * receiver kit, the CLI and the server throw the second group in-process; a few codes
 * (not_found, payload_too_large, url_not_allowed, encryption_key_missing, body_aborted) are
 * in both, with the same meaning.
 */
export const ERROR_CODES = {
  // ------------------------------------------------------------ answered by the HTTP API
  bad_request: "the request cannot be taken as it stands",
  invalid_json: "the body is not valid JSON",
  empty_body: "a JSON content type with an empty body",
  unauthorized: "no API key, or one that is malformed, unknown or revoked",
  forbidden: "an app-scoped key asks for what only admin keys may do",
  not_found: "no such resource within reach",
  conflict: "a uid or name already taken; a state that does not allow the change",
  idempotency_conflict: "the idempotency-key is being taken over right now",
  idempotency_in_progress: "the first request with this idempotency-key is still running",
  encryption_key_missing: "a secret is sealed under a key this process was not given",
  payload_too_large: "the body is over the size limit",
  unsupported_media_type: "a body that is not application/json",
  validation_error: "a field's value breaks its rule",
  url_not_allowed: "the URL points where the SSRF guard refuses to send",
  idempotency_key_reused: "the idempotency-key was used with a different request",
  rate_limited: "over the API rate limit for this key",
  not_supported: "a Svix feature hookrelay does not have (transformations)",
  internal_error: "anything unexpected",
  database_unavailable: "the database cannot be reached right now",
  since_in_future: "a replay window that starts after now",
  until_before_since: "a replay window that ends before (or when) it starts",
  window_beyond_retention: "a replay window that starts before the payload retention",
  unknown_event_type: "an event type filter naming a type hookrelay has never seen",
  unknown_status: "a delivery status filter naming no status a replay can select",
  replay_in_progress: "a replay of the endpoint over an overlapping window is running",
  invalid_proxy_url: "a proxy URL with a bad scheme, no host, or a path",
  unknown_egress_pool: "an egress pool this server does not configure",
  invalid_certificate: "a client certificate, key or CA bundle that does not parse",
  certificate_key_mismatch: "a client certificate whose key is not the key given",
  certificate_expired: "a client certificate past its end date, or not valid yet",
  invalid_oauth: "OAuth2 settings with a bad token URL, a missing field or an unknown auth method",
  // ------------------------------------------------------------ thrown in-process
  invalid_config: "a setting, option or flag is missing or malformed",
  database_error: "the database refused or failed an operation hookrelay needs",
  schema_too_new: "the database was migrated by a newer hookrelay than this one",
  schema_not_migrated: "the schema is missing or behind, and this process does not migrate it",
  insufficient_privilege: "the database role lacks a right hookrelay needs",
  not_running: "a component was used before start() or after stop()",
  invalid_secret: "a signing secret is not whsec_ + base64 (or whsk_ for Ed25519)",
  invalid_event_type: "an eventType that breaks the name rule",
  invalid_payload: "a payload that is not a JSON object",
  csrf_refused: "a state-changing form without a valid CSRF token, or from another origin",
  webhook_verification_failed: "a received webhook failed verification (see its reason)",
  raw_body_consumed: "a body parser ran before the receiver kit and left no raw bytes",
  body_aborted: "the request broke off before its body was complete",
  dedup_failed: "the receiver kit's dedup store failed to say whether a message was seen",
  proxy_failed: "an egress proxy could not be reached, or refused the tunnel",
  server_unreachable: "the CLI or the MCP server got no answer from the hookrelay API",
  dry_run_required: "an MCP action confirmed without the plan token of its own dry run",
} as const;

export type ErrorCode = keyof typeof ERROR_CODES;

export class HookRelayError extends Error {
  readonly code: ErrorCode;
  constructor(code: ErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
    this.code = code;
  }
}

export class ConfigError extends HookRelayError {
  constructor(message: string, options?: { cause?: unknown }) {
    super("invalid_config", message, options);
  }
}

export class DatabaseError extends HookRelayError {
  constructor(message: string, options?: { cause?: unknown }) {
    super("database_error", message, options);
  }
}

/**
 * An error the API answers with its own status and `{ code, detail }` body. The API builds
 * them with api/errors.ts, whose registry gives each code its one status.
 */
export class ApiError extends HookRelayError {
  readonly status: number;
  /** extra response headers, e.g. Retry-After on a 429 */
  readonly headers: Record<string, string>;
  constructor(
    status: number,
    code: ErrorCode,
    detail: string,
    options?: { cause?: unknown; headers?: Record<string, string> },
  ) {
    super(code, detail, options);
    this.status = status;
    this.headers = options?.headers ?? {};
  }

  toJSON(): { code: string; detail: string } {
    return { code: this.code, detail: this.message };
  }
}

/**
 * The registry's code for `value` (a `code` read from an API answer), or internal_error for
 * anything else: a code from a newer server, or no code at all.
 */
export const errorCodeOf = (value: unknown): ErrorCode =>
  typeof value === "string" && Object.hasOwn(ERROR_CODES, value)
    ? (value as ErrorCode)
    : "internal_error";
