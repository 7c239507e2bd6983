/**
 * How the API refuses input (docs/errors.md, docs/security.md "Input"): each kind of
 * refusal's status and code in one place, so that a change of status or code (a bad URL
 * moving from 400 to 422, say) is one line here and not an edit of every test that
 * expects it.
 */
import { expect } from "vitest";

export interface Refusal {
  status: number;
  code: string;
}

export const REFUSAL = {
  /** the body, query or path fails the route's JSON schema */
  schema: { status: 422, code: "validation_error" },
  /** a field breaks a rule the schema cannot express: a URL not absolute http(s), a bad secret */
  fieldRule: { status: 422, code: "validation_error" },
  /**
   * the request cannot be taken as it stands: NUL or a lone surrogate outside the payload,
   * a date JavaScript or PostgreSQL cannot take, fields that contradict each other
   */
  badRequest: { status: 400, code: "bad_request" },
  /** the body is not JSON, or holds a prototype-pollution key */
  invalidJson: { status: 400, code: "invalid_json" },
  /** over the request body limit */
  tooLarge: { status: 413, code: "payload_too_large" },
  /** a resource named in the path or body does not exist (or is another app's) */
  notFound: { status: 404, code: "not_found" },
  /** a uid or name already taken */
  conflict: { status: 409, code: "conflict" },
  /** the SSRF guard refuses the endpoint URL */
  urlNotAllowed: { status: 422, code: "url_not_allowed" },
  /** a replay's window (docs/recovery.md): starts in the future, ends before it starts, or
   * reaches back past the payload retention */
  sinceInFuture: { status: 422, code: "since_in_future" },
  untilBeforeSince: { status: 422, code: "until_before_since" },
  windowBeyondRetention: { status: 422, code: "window_beyond_retention" },
  /** a bulk replay's filter names an event type or status hookrelay does not know */
  unknownEventType: { status: 422, code: "unknown_event_type" },
  unknownStatus: { status: 422, code: "unknown_status" },
  /** a replay of the endpoint over an overlapping window is running */
  replayInProgress: { status: 409, code: "replay_in_progress" },
  /** egress (docs/egress.md): a proxy URL, pool or certificate refused when saved */
  invalidProxyUrl: { status: 422, code: "invalid_proxy_url" },
  unknownEgressPool: { status: 422, code: "unknown_egress_pool" },
  invalidCertificate: { status: 422, code: "invalid_certificate" },
  certificateKeyMismatch: { status: 422, code: "certificate_key_mismatch" },
  certificateExpired: { status: 422, code: "certificate_expired" },
  /** OAuth2 (docs/oauth2.md): settings refused when saved (a token URL, a missing field) */
  invalidOauth: { status: 422, code: "invalid_oauth" },
} as const satisfies Record<string, Refusal>;

/** The refusals a body its route's schema accepts may still get: checks beyond the schema. */
export const REFUSALS_OF_VALID_BODIES: readonly Refusal[] = [
  REFUSAL.fieldRule,
  REFUSAL.badRequest,
  REFUSAL.notFound,
  REFUSAL.conflict,
  REFUSAL.urlNotAllowed,
  REFUSAL.sinceInFuture,
  REFUSAL.untilBeforeSince,
  REFUSAL.windowBeyondRetention,
  REFUSAL.unknownEventType,
  REFUSAL.unknownStatus,
  REFUSAL.replayInProgress,
  REFUSAL.invalidProxyUrl,
  REFUSAL.unknownEgressPool,
  REFUSAL.invalidCertificate,
  REFUSAL.certificateKeyMismatch,
  REFUSAL.certificateExpired,
  REFUSAL.invalidOauth,
];

/** An answer of parsed JSON (the harness's call()), or of inject() with its text body. */
type Answer = { status: number; body: unknown } | { statusCode: number; body: string };

const statusOf = (res: Answer) => ("statusCode" in res ? res.statusCode : res.status);
const bodyOf = (res: Answer): unknown => {
  if (!("statusCode" in res)) return res.body;
  try {
    return JSON.parse(res.body);
  } catch {
    return res.body;
  }
};

/** The answer is `refusal`: its status, and `{ code, detail }` with its code. */
export function expectRefusal(res: Answer, refusal: Refusal, what = ""): void {
  expect(statusOf(res), what).toBe(refusal.status);
  expect(bodyOf(res), what).toEqual({ code: refusal.code, detail: expect.any(String) });
}

/** Whether the answer is one of `refusals` (status and code). */
export function isOneOf(res: Answer, refusals: readonly Refusal[]): boolean {
  const body = bodyOf(res) as { code?: unknown } | null;
  return refusals.some((r) => r.status === statusOf(res) && body?.code === r.code);
}

/**
 * Whether the answer is the route schema's refusal rather than a rule beyond it (both are
 * 422 validation_error): the schema's detail names the place in the body as the validator
 * does ("body/url must ...", "body must have required property ...", "body has unknown
 * field ..."); the other rules name the field ("url is not a valid absolute URL").
 */
export function isSchemaRefusal(res: Answer): boolean {
  const body = bodyOf(res) as { code?: unknown; detail?: unknown } | null;
  return (
    statusOf(res) === REFUSAL.schema.status &&
    body?.code === REFUSAL.schema.code &&
    typeof body.detail === "string" &&
    /^body[/ ]/.test(body.detail)
  );
}
