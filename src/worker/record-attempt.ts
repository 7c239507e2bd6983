/**
 * Attempt recording: turns the outcome of one attempt into the result the result writer
 * stores (result-writer.ts, then src/queue/record-results.ts): the delivery's next state
 * (afterAttempt, with the endpoint's retry policy), a Retry-After pause for the whole
 * endpoint, and the texts people will read (error, response body, URL) with sensitive
 * values masked (docs/security.md, Sensitive values).
 */
import type { DeliveryDefaults } from "../config.ts";
import { MAX_RESPONSE_STORED_BYTES, truncateUtf8 } from "../delivery/http-sender.ts";
import type { ShownTarget } from "../delivery/transport.ts";
import type { AttemptOutcome } from "../domain/attempt-outcome.ts";
import { givesBack, pauseFor } from "../domain/backpressure.ts";
import { afterAttempt } from "../domain/delivery-states.ts";
import { effective } from "../domain/endpoint-policy-derived.ts";
import { attemptEvent, type OperationalTarget } from "../domain/operational-events.ts";
import { ErrorKind, type RetryPolicy, Verdict } from "../domain/retry-policy.ts";
import type { ClaimedDelivery } from "../queue/claim-deliveries.ts";
import type { DeliveryResult } from "../queue/record-results.ts";
import type { Redactor } from "../security/redact.ts";
import type { LoopLateness } from "./loop-lateness.ts";
import type { ResultWriter } from "./result-writer.ts";

export interface AttemptRecorder {
  /**
   * Hands the outcome of `claim`'s attempt to the result writer; `finishesClaim` when it is
   * the last row of its claim without a result (the claim's lease row goes with it).
   */
  record(
    claim: ClaimedDelivery,
    claimToken: string,
    outcome: AttemptOutcome,
    finishesClaim: boolean,
    /** where the attempt went, as its transport's prepare showed it; absent: the endpoint's URL */
    sent?: ShownTarget,
  ): void;
}

// Masked URLs are kept per endpoint URL; dropped whole past this many.
const MASKED_URLS_MAX = 10_000;

export function makeAttemptRecorder(deps: {
  writer: Pick<ResultWriter, "add">;
  /** masks sensitive values in stored error texts, response bodies and URLs */
  redactor: Redactor;
  /** the retry schedule of endpoints without their own */
  defaults: Pick<DeliveryDefaults, "retryBaseMs" | "retryCapMs">;
  /** where operational events go; null or absent: none are raised */
  operational?: OperationalTarget | null;
  /**
   * the worker's event loop lateness (loop-lateness.ts): each result carries the worker's
   * own share of its latency; absent: 0
   */
  lateness?: Pick<LoopLateness, "ownShare">;
}): AttemptRecorder {
  const { redactor, defaults } = deps;
  const operational = deps.operational ?? null;
  const maskedUrls = new Map<string, string>();

  /**
   * The error text and the stored response body with sensitive values masked: by field name
   * and, since receivers echo them in prose, every value of the payload's sensitive fields.
   * Masked first, then cut to 1 KiB.
   */
  function maskedTexts(payload: string, result: AttemptOutcome, secrets: readonly string[]) {
    if (result.error === null && result.response === null)
      return { error: null, responseBody: null };
    // (valuesIn keeps values of 4+ characters: a shorter text cannot contain one)
    const values =
      (result.error?.length ?? 0) >= 4 || (result.response?.length ?? 0) >= 4
        ? redactor.valuesIn(payload)
        : [];
    // longest first: a value that contains another is masked whole
    if (secrets.length > 0)
      values.push(...[...secrets].filter((v) => v.length >= 4).sort((a, b) => b.length - a.length));
    return {
      error: result.error === null ? null : redactor.textWithout(result.error, values),
      responseBody:
        result.response === null
          ? null
          : truncateUtf8(
              // a window well past the cut, so a value straddling the 1 KiB limit is still seen whole
              Buffer.from(
                redactor.textWithout(
                  result.response.slice(0, 4 * MAX_RESPONSE_STORED_BYTES),
                  values,
                ),
              ),
              MAX_RESPONSE_STORED_BYTES,
            ),
    };
  }

  /** An endpoint URL as stored in its attempt rows (sensitive query values masked). */
  function maskedUrl(url: string): string {
    let masked = maskedUrls.get(url);
    if (masked === undefined) {
      masked = redactor.url(url);
      if (maskedUrls.size > MASKED_URLS_MAX) maskedUrls.clear();
      maskedUrls.set(url, masked);
    }
    return masked;
  }

  return {
    record(claim, claimToken, result, finishesClaim, sent) {
      const attemptNumber = claim.attemptCount + 1;
      // A backpressure answer (429, 503 with Retry-After: domain/backpressure.ts) gives its
      // attempt back, a bounded number of times: the budget grows by the attempts given back.
      const backpressure = result.errorKind === ErrorKind.rateLimited;
      const givenBackBefore = claim.attemptsGivenBack ?? 0;
      const givenBack = backpressure && givesBack(givenBackBefore) ? 1 : 0;
      const capMs = effective(claim, defaults, "retryCapMs");
      const policy: RetryPolicy = {
        maxAttempts: claim.maxAttempts + givenBackBefore + givenBack,
        baseMs: effective(claim, defaults, "retryBaseMs"),
        capMs,
      };
      // Its Retry-After pauses the whole endpoint, not just this delivery, within the
      // floor and the cap; the delivery is due again when the pause ends.
      const pauseMs = pauseFor(result.retryAfterMs, capMs);
      const next = afterAttempt(result.verdict, attemptNumber, policy, pauseMs);
      const success = result.verdict === Verdict.success;
      // the operator application's own deliveries report on nothing (no loop)
      const operationalEvent =
        operational === null || claim.appId === operational.appId
          ? null
          : attemptEvent({
              attemptNumber,
              nextStatus: next.status,
              success,
              failureNotified: claim.failureNotified,
            });
      const recorded: DeliveryResult = {
        deliveryId: claim.id,
        messageMs: claim.messageMs,
        claimToken,
        messageId: claim.messageId,
        endpointId: claim.endpointId,
        appId: claim.appId,
        trigger: claim.trigger,
        // a rendered template's URL is new for every message: masked, not cached
        url: sent?.shownUrl ? redactor.url(sent.shownUrl) : maskedUrl(claim.url),
        attemptNumber,
        nextStatus: next.status,
        retryDelayMs: next.retryDelayMs,
        startedAt: result.startedAt,
        latencyMs: result.latencyMs,
        // the attempt has just ended: its request was out for the last latencyMs
        ...(deps.lateness && {
          workerLateMs: Math.round(deps.lateness.ownShare(result.latencyMs)),
        }),
        success,
        // the transport's own detail: HTTP's status in attempts.status_code, the others'
        // whole in attempts.detail
        statusCode: result.detail.transport === "http" ? result.detail.statusCode : null,
        ...(result.detail.transport !== "http" && { detail: JSON.stringify(result.detail) }),
        errorKind: result.errorKind,
        ...maskedTexts(claim.payload, result, sent?.secrets ?? []),
        isProbe: claim.isProbe,
        pauseMs,
        ...(backpressure && { backpressure: true }),
        ...(givenBack > 0 && { givenBack }),
        finishesClaim,
        // nothing reached the endpoint: a missing template field, an expunged message's
        // payload, or an egress proxy that failed (docs/egress.md)
        ...((result.errorKind === ErrorKind.missingField ||
          result.errorKind === ErrorKind.expunged ||
          result.errorKind === ErrorKind.proxy) && { notSent: true }),
        operationalEvent,
      };
      deps.writer.add(recorded);
    },
  };
}
