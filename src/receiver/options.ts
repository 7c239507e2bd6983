/** What the Express middleware and the Fastify plugin share: their options, results and failures. */
import type { DedupStore } from "./dedup-store.ts";
import { WebhookBodyError, WebhookDedupError, WebhookVerificationError } from "./errors.ts";
import type { VerifiedWebhook, WebhookVerifierOptions } from "./verify.ts";

export interface ReceiverOptions extends WebhookVerifierOptions {
  /** skip messages already handled; see DedupStore (default: no deduplication) */
  dedup?: DedupStore;
  /** largest body read, in bytes; default 1_048_576 (413 above) */
  limitBytes?: number;
  /** called when marking a message seen failed after its response; default console.error */
  onDedupError?: (err: unknown) => void;
  /**
   * Default false: the kit answers its own failures itself, a 500 JSON `{ code, detail }`
   * (a body a parser already consumed, a dedup store that failed), and tells `onError`.
   * true: they go to the framework instead (Express's `next(err)`, Fastify's error
   * handler). A sender's mistakes (401, 413, 400) are always answered by the kit.
   */
  forwardErrors?: boolean;
  /**
   * Told of each failure the kit answered 500 itself; default console.error (Express), the
   * request's logger (Fastify).
   */
  onError?: (err: unknown) => void;
}

/** What the middleware and the plugin put on `request.webhook`. */
export type ReceivedWebhook<T = unknown> = VerifiedWebhook<T> & {
  /** the body exactly as received */
  rawBody: Buffer | string;
};

/** An error caused by the request (status < 500) is answered; others go to the framework. */
export function isRequestError(err: unknown): err is WebhookVerificationError | WebhookBodyError {
  return (
    (err instanceof WebhookVerificationError || err instanceof WebhookBodyError) && err.status < 500
  );
}

/** A status and JSON body for the sender. */
export interface FailureAnswer {
  status: number;
  body: { code: string; detail: string; reason?: string };
}

/**
 * The answer to a webhook the kit could not hand to the handler (docs/receiver.md, When the
 * kit fails): the kit's own errors say what went wrong; anything else is a bare
 * `internal_error`, its message and stack kept for the receiver's log, not sent.
 */
export function failureAnswer(err: unknown): FailureAnswer {
  if (
    err instanceof WebhookVerificationError ||
    err instanceof WebhookBodyError ||
    err instanceof WebhookDedupError
  ) {
    return { status: err.status, body: err.toJSON() };
  }
  return {
    status: 500,
    body: { code: "internal_error", detail: "the webhook receiver failed; its log says why" },
  };
}

export function defaultDedupError(err: unknown): void {
  console.error("hookrelay/receiver: marking a webhook seen failed", err);
}

export function defaultKitError(err: unknown): void {
  console.error("hookrelay/receiver: a webhook was answered 500", err);
}
