/**
 * Request preparation: turns a claimed delivery into the signed HTTP request the sender
 * makes (docs/delivery.md, Signing): the endpoint's URL and headers, the payload as the
 * body, and the Standard Webhooks headers signed with every secret that signs right now.
 * A secret that cannot be opened (sealed under a key this process lacks) means nothing can
 * be sent; that is an attempt outcome of its own (docs/delivery.md, What is retried).
 */
import type { AttemptResult, OutboundRequest } from "../delivery/http-sender.ts";
import { ErrorKind, Verdict } from "../delivery/retry-policy.ts";
import { type SigningKey, signatureHeader } from "../delivery/sign.ts";
import { signingKeyOf } from "../delivery/signing-key.ts";
import type { ClaimedDelivery } from "../queue/claim-deliveries.ts";
import type { SecretBox } from "../security/secret-box.ts";

export const USER_AGENT = "hookrelay/0.1 (+webhook delivery)";

/** The request to send, or the outcome of an attempt that could not be signed. */
export type Preparation =
  | { ok: true; request: Omit<OutboundRequest, "abort"> }
  | { ok: false; error: unknown; outcome: AttemptResult };

export interface RequestPreparer {
  /** `nowMs`: the send time (the signature's timestamp), default Date.now() */
  prepare(claim: ClaimedDelivery, nowMs?: number): Preparation;
}

// Keys derived from secrets are kept: a secret is opened and decoded once, not per request
// (HMAC keys and Ed25519 private keys alike: the sealed text's prefix says which).
// The cache is dropped whole when it grows past this (rotations leave old secrets behind).
const KEY_CACHE_MAX = 10_000;

export function makeRequestPreparer(deps: { secretBox: SecretBox }): RequestPreparer {
  const keyCache = new Map<string, SigningKey>();

  function keysFor(secrets: string[]): SigningKey[] {
    return secrets.map((secret) => {
      let key = keyCache.get(secret);
      if (!key) {
        key = signingKeyOf(deps.secretBox.open(secret));
        if (keyCache.size > KEY_CACHE_MAX) keyCache.clear();
        keyCache.set(secret, key);
      }
      return key;
    });
  }

  return {
    prepare(claim, nowMs = Date.now()) {
      const timestamp = Math.floor(nowMs / 1000);
      let keys: SigningKey[];
      try {
        keys = keysFor(claim.secrets);
      } catch (error) {
        return { ok: false, error, outcome: signingFailure(error) };
      }
      return {
        ok: true,
        request: {
          url: claim.url,
          headers: {
            ...claim.headers,
            "content-type": "application/json",
            "user-agent": USER_AGENT,
            "webhook-id": claim.messageId,
            "webhook-timestamp": String(timestamp),
            "webhook-signature": signatureHeader(keys, claim.messageId, timestamp, claim.payload),
          },
          body: claim.payload,
          timeoutMs: claim.timeoutMs,
        },
      };
    },
  };
}

/** The outcome of an attempt that could not be signed (no request was sent). */
function signingFailure(err: unknown): AttemptResult {
  return {
    startedAt: new Date(),
    latencyMs: 0,
    statusCode: null,
    verdict: Verdict.transient,
    errorKind: ErrorKind.signing,
    error: `signing secret could not be opened: ${(err as Error).message}`,
    responseBody: null,
    retryAfterMs: null,
  };
}
