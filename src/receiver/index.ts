/**
 * `hookrelay/receiver`: the receiving side of Standard Webhooks, for hookrelay's
 * deliveries or any other sender's. Verify signatures (v1 HMAC, v1a Ed25519), deduplicate
 * by webhook-id (in memory, or in PostgreSQL inside your own transaction), and Express and
 * Fastify adapters. It loads only node: built-ins: no server code, no `pg`, no express or
 * fastify (their adapters take the objects those frameworks pass in). See docs/receiver.md.
 */
export { type DedupGate, type DedupTicket, makeDedupGate } from "./dedup-gate.ts";
export {
  type DedupStore,
  MEMORY_DEDUP_DEFAULTS,
  type MemoryDedupStore,
  type MemoryDedupStoreOptions,
  makeMemoryDedupStore,
} from "./dedup-store.ts";
export {
  BODY_ERROR_CODES,
  VERIFICATION_REASONS,
  type VerificationReason,
  WebhookBodyError,
  WebhookDedupError,
  WebhookVerificationError,
} from "./errors.ts";
export { expressWebhookMiddleware, type WebhookMiddleware } from "./express.ts";
export { fastifyWebhookPlugin } from "./fastify.ts";
export type { HeadersLike } from "./headers.ts";
export { ED25519_PUBLIC_PREFIX, HMAC_SECRET_PREFIX } from "./keys.ts";
export type { ReceivedWebhook, ReceiverOptions } from "./options.ts";
export {
  createDedupTable,
  DEFAULT_DEDUP_TABLE,
  type DedupTableOptions,
  dedupTableSql,
  isSeen,
  makePgDedupStore,
  markSeen,
  type PurgeSeenOptions,
  purgeSeen,
  type Queryable,
} from "./pg-dedup.ts";
export { DEFAULT_BODY_LIMIT_BYTES } from "./raw-body.ts";
export {
  DEFAULT_TOLERANCE_SEC,
  makeWebhookVerifier,
  type VerifiedWebhook,
  type VerifyWebhookOptions,
  verifyWebhook,
  verifyWebhookMessage,
  type WebhookVerifier,
  type WebhookVerifierOptions,
} from "./verify.ts";
