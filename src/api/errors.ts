/**
 * The codes the API answers with (a part of the one registry in src/errors.ts), each with
 * the one HTTP status it is answered with. docs/errors.md lists them for clients (a test
 * keeps the two equal).
 */
import { ApiError, type ErrorCode } from "../errors.ts";

export const API_ERRORS = {
  /** the request cannot be taken as it stands (see docs/errors.md) */
  bad_request: 400,
  invalid_json: 400,
  empty_body: 400,
  /** a Svix feature hookrelay does not have: a 4xx, so clients do not retry it */
  not_supported: 400,
  /** the client hung up mid-body; answered only when its connection can still be written to */
  body_aborted: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  idempotency_conflict: 409,
  idempotency_in_progress: 409,
  encryption_key_missing: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  /** a field's value breaks its rule (the schema's, or one it cannot express) */
  validation_error: 422,
  url_not_allowed: 422,
  idempotency_key_reused: 422,
  rate_limited: 429,
  internal_error: 500,
  /** the database cannot be reached right now (restart, failover); Retry-After says when to retry */
  database_unavailable: 503,
  /** a replay window (docs/recovery.md) that starts in the future */
  since_in_future: 422,
  until_before_since: 422,
  /** older than HOOKRELAY_RETENTION_PAYLOAD_MS: those messages are gone */
  window_beyond_retention: 422,
  unknown_event_type: 422,
  unknown_status: 422,
  /** a running replay of the same endpoint overlaps the window */
  replay_in_progress: 409,
  /** egress (docs/egress.md) */
  invalid_proxy_url: 422,
  unknown_egress_pool: 422,
  invalid_certificate: 422,
  certificate_key_mismatch: 422,
  certificate_expired: 422,
  invalid_oauth: 422,
} as const satisfies { [code in ErrorCode]?: number };

export type ApiErrorCode = keyof typeof API_ERRORS;

/** An ApiError with `code`'s status. */
export function apiError(
  code: ApiErrorCode,
  detail: string,
  options?: { cause?: unknown; headers?: Record<string, string> },
): ApiError {
  return new ApiError(API_ERRORS[code], code, detail, options);
}

export const badRequest = (detail: string) => apiError("bad_request", detail);
export const validationError = (detail: string, options?: { cause?: unknown }) =>
  apiError("validation_error", detail, options);
export const notFound = (what: string) => apiError("not_found", `${what} not found`);
export const forbidden = (detail: string) => apiError("forbidden", detail);
export const conflict = (detail: string, options?: { cause?: unknown }) =>
  apiError("conflict", detail, options);

/** Seconds a client is asked to wait (Retry-After) while the database is unreachable. */
export const DATABASE_RETRY_AFTER_S = 2;

/** The 503 for a request that failed because the database is unreachable (docs/reliability.md). */
export const databaseUnavailable = (cause: unknown) =>
  apiError("database_unavailable", "the database cannot be reached right now; retry later", {
    cause,
    headers: { "retry-after": String(DATABASE_RETRY_AFTER_S) },
  });

/** True for the 404 of notFound(): a lookup that found nothing (PUT then creates). */
export const isNotFound = (err: unknown): boolean =>
  err instanceof ApiError && err.code === "not_found";
