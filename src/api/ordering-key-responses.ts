/**
 * The answers of the blocked-ordering-key routes (api/routes/ordering-keys.ts;
 * docs/delivery.md, "Ordering").
 */
import { count, nullableCount, nullableText, pageOf, text } from "./response-parts.ts";

/** One blocked key: its head, why it holds the key, since when, and how many wait. */
export const blockedKeyResponse = {
  type: "object",
  properties: {
    /** "" is a FIFO endpoint's one key: the whole endpoint */
    key: text,
    wholeEndpoint: { type: "boolean" },
    deliveryId: text,
    msgId: text,
    /** dead_letter: it ran out of attempts and the endpoint blocks; retrying: it waits */
    reason: { type: "string", enum: ["dead_letter", "retrying"] },
    since: text,
    nextAttemptAt: nullableText,
    attemptCount: count,
    lastErrorKind: nullableText,
    lastStatusCode: nullableCount,
    lastError: nullableText,
    waiting: count,
  },
  required: [
    "key",
    "wholeEndpoint",
    "deliveryId",
    "msgId",
    "reason",
    "since",
    "nextAttemptAt",
    "attemptCount",
    "lastErrorKind",
    "lastStatusCode",
    "lastError",
    "waiting",
  ],
} as const;

/** GET .../ordering-keys/blocked: a page of them, oldest head first. */
export const blockedKeyPageResponse = pageOf(blockedKeyResponse);

/** POST .../ordering-keys/blocked/{deliveryId}/retry | skip */
export const blockedKeyActionResponse = {
  type: "object",
  properties: {
    deliveryId: text,
    key: text,
    /** retry: pending (a dead head requeued) or failed (due now); skip: canceled */
    status: { type: "string", enum: ["pending", "failed", "canceled"] },
  },
  required: ["deliveryId", "key", "status"],
} as const;
