/** What the Express middleware and the Fastify plugin share: their options and results. */
import type { DedupStore } from "./dedup-store.ts";
import { WebhookBodyError, WebhookVerificationError } from "./errors.ts";
import type { VerifiedWebhook, WebhookVerifierOptions } from "./verify.ts";

export interface ReceiverOptions extends WebhookVerifierOptions {
  /** skip messages already handled; see DedupStore (default: no deduplication) */
  dedup?: DedupStore;
  /** largest body read, in bytes; default 1_048_576 (413 above) */
  limitBytes?: number;
  /** called when marking a message seen failed after its response; default console.error */
  onDedupError?: (err: unknown) => void;
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

export function defaultDedupError(err: unknown): void {
  console.error("hookrelay/receiver: marking a webhook seen failed", err);
}
