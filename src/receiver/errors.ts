/**
 * Why a webhook was refused. `reason` is stable and machine-readable; the message says the
 * same for a human. See docs/receiver.md for what each one means to a sender.
 */
import { HookRelayError } from "../errors.ts";

export const VERIFICATION_REASONS = {
  /** webhook-id, webhook-timestamp or webhook-signature is absent or empty */
  missingHeader: "missing_header",
  /** webhook-timestamp is not a whole number of unix seconds */
  badTimestamp: "bad_timestamp",
  /** the timestamp is older than the tolerance: a stale or replayed request */
  timestampTooOld: "timestamp_too_old",
  /** the timestamp is further in the future than the tolerance */
  timestampTooNew: "timestamp_too_new",
  /** no signature in the header matches any of the receiver's keys */
  noMatchingSignature: "no_matching_signature",
  /** a secret or public key given to the receiver is malformed (the receiver's own mistake) */
  badSecret: "bad_secret",
  /** the body was not handed over as raw bytes or a string (e.g. an already-parsed object) */
  bodyNotRaw: "body_not_raw",
  /** the signature matched but the body is not JSON */
  bodyNotJson: "body_not_json",
} as const;

export type VerificationReason = (typeof VERIFICATION_REASONS)[keyof typeof VERIFICATION_REASONS];

/** A webhook that failed verification; `reason` says why. */
export class WebhookVerificationError extends HookRelayError {
  readonly reason: VerificationReason;
  /**
   * The HTTP status a receiver should answer: 401 for the sender's request, 500 when the
   * receiver itself is misconfigured (bad_secret, body_not_raw).
   */
  readonly status: number;

  constructor(reason: VerificationReason, detail: string, options?: { cause?: unknown }) {
    super("webhook_verification_failed", detail, options);
    this.reason = reason;
    this.status =
      reason === VERIFICATION_REASONS.badSecret || reason === VERIFICATION_REASONS.bodyNotRaw
        ? 500
        : 401;
  }

  /** The JSON body a receiver answers with. */
  toJSON(): { code: string; reason: VerificationReason; detail: string } {
    return { code: "webhook_verification_failed", reason: this.reason, detail: this.message };
  }
}

export const BODY_ERROR_CODES = {
  /** a body parser ran first and left a parsed value instead of the bytes (status 500) */
  consumed: "raw_body_consumed",
  /** the body is larger than the receiver's limit (status 413) */
  tooLarge: "payload_too_large",
  /** the request broke off before its body was complete (status 400) */
  aborted: "body_aborted",
} as const;

type BodyErrorCode = (typeof BODY_ERROR_CODES)[keyof typeof BODY_ERROR_CODES];

const BODY_ERROR_STATUS: Record<BodyErrorCode, number> = {
  raw_body_consumed: 500,
  payload_too_large: 413,
  body_aborted: 400,
};

/** The raw body cannot be read: a parser consumed it, it is too large, or it broke off. */
export class WebhookBodyError extends HookRelayError {
  declare readonly code: BodyErrorCode;
  readonly status: number;
  constructor(code: BodyErrorCode, detail: string, options?: { cause?: unknown }) {
    super(code, detail, options);
    this.status = BODY_ERROR_STATUS[code];
  }

  toJSON(): { code: string; detail: string } {
    return { code: this.code, detail: this.message };
  }
}

/** The dedup store failed to say whether a message was seen (status 500: the sender retries). */
export class WebhookDedupError extends HookRelayError {
  readonly status = 500;
  constructor(options: { cause: unknown }) {
    super(
      "dedup_failed",
      "the receiver's dedup store failed, so the message was not handled; a retry will be",
      options,
    );
  }

  toJSON(): { code: string; detail: string } {
    return { code: this.code, detail: this.message };
  }
}
