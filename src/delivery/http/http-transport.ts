/**
 * HTTP, the first transport (delivery/transport.ts): prepare signs the request and renders
 * a postback URL template (prepare-request.ts); send makes it through the HTTP sender
 * (delivery/http-sender.ts: one deadline, the SSRF guard, the status classification of
 * delivery/http-status.ts, Retry-After), then applies the endpoint's success rule
 * (delivery/success-rule.ts: a 2xx may still be a refusal). The status code is the
 * outcome's HTTP detail, the response body its stored response.
 */

import type { AttemptOutcome } from "../../domain/attempt-outcome.ts";
import type { Logger } from "../../logger.ts";
import type { SecretBox } from "../../security/secret-box.ts";
import { AttemptAbort, type AttemptResult, type HttpSender } from "../http-sender.ts";
import { applySuccessRule } from "../success-rule.ts";
import { DestinationKind, type Transport } from "../transport.ts";
import { type HttpRequest, makeRequestPreparer } from "./prepare-request.ts";

export interface HttpTransportOptions {
  /** the shared sender (its undici Agent); closed by whoever made it (runtime.ts) */
  sender: HttpSender;
  /** opens signing secrets and URL tokens sealed at rest */
  secretBox: SecretBox;
  /** field names whose values a rendered URL masks in attempt rows (security/redact.ts) */
  isSensitive?: (name: string) => boolean;
  /** told once per endpoint about custom headers dropped at send time */
  logger?: Pick<Logger, "warn">;
}

export function makeHttpTransport(options: HttpTransportOptions): Transport<HttpRequest> {
  const { sender } = options;
  const preparer = makeRequestPreparer(options);
  return {
    kind: DestinationKind.http,
    prepare: (delivery, nowMs) => preparer.prepare(delivery, nowMs),
    async send(request, abort) {
      // (the worker's handles come from newAbort below: AttemptAbort, which undici takes;
      // the sender reads the request's fields by name, so the success rule rides along)
      const sent = await sender.send({ ...request, abort: abort as AttemptAbort });
      return httpOutcome(applySuccessRule(sent, request.successRule));
    },
    newAbort: () => new AttemptAbort(),
    // the sender is shared and closed by its owner
    close: async () => {},
  };
}

/** The sender's result as a transport-neutral outcome. */
export function httpOutcome(result: AttemptResult): AttemptOutcome {
  return {
    startedAt: result.startedAt,
    latencyMs: result.latencyMs,
    verdict: result.verdict,
    errorKind: result.errorKind,
    error: result.error,
    response: result.responseBody,
    retryAfterMs: result.retryAfterMs,
    detail: { transport: "http", statusCode: result.statusCode },
  };
}
