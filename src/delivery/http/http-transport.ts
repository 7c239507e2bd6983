/**
 * HTTP, the first transport (delivery/transport.ts): prepare signs the request and renders
 * a postback URL template (prepare-request.ts); send makes it through the HTTP sender
 * (delivery/http-sender.ts: one deadline, the SSRF guard, the status classification of
 * delivery/http-status.ts, Retry-After), then applies the endpoint's success rule
 * (delivery/success-rule.ts: a 2xx may still be a refusal). The status code is the
 * outcome's HTTP detail, the response body its stored response.
 *
 * An endpoint with OAuth2 client credentials (docs/oauth2.md) sends `Authorization: Bearer`
 * with a token from oauth2-token.ts. A 401 from the receiver drops that token and the
 * request is made once more with a new one, inside the same attempt: the attempt's outcome
 * is the second answer's (a second 401 fails the attempt like any 401). No token: the
 * attempt fails with kind `oauth` and nothing reaches the receiver. The endpoint's timeout
 * bounds the whole attempt: the wait for a token, the request, and after a 401 both again.
 */
import { performance } from "node:perf_hooks";

import type { AttemptOutcome } from "../../domain/attempt-outcome.ts";
import type { Logger } from "../../logger.ts";
import type { SecretBox } from "../../security/secret-box.ts";
import { AttemptAbort, type AttemptResult, type HttpSender } from "../http-sender.ts";
import { applySuccessRule } from "../success-rule.ts";
import { DestinationKind, type Transport } from "../transport.ts";
import { makeOAuth2Tokens, type OAuth2Tokens } from "./oauth2-token.ts";
import { type HttpRequest, makeRequestPreparer, USER_AGENT } from "./prepare-request.ts";

export interface HttpTransportOptions {
  /** the shared sender (its undici Agent); closed by whoever made it (runtime.ts) */
  sender: HttpSender;
  /** opens signing secrets and URL tokens sealed at rest */
  secretBox: SecretBox;
  /** field names whose values a rendered URL masks in attempt rows (security/redact.ts) */
  isSensitive?: (name: string) => boolean;
  /** told once per endpoint about custom headers dropped at send time */
  logger?: Pick<Logger, "warn">;
  /** OAuth2 tokens (docs/oauth2.md); default: a cache of this transport's own */
  oauth2Tokens?: OAuth2Tokens;
}

export function makeHttpTransport(options: HttpTransportOptions): Transport<HttpRequest> {
  const { sender } = options;
  const preparer = makeRequestPreparer(options);
  const tokens = options.oauth2Tokens ?? makeOAuth2Tokens({ sender, userAgent: USER_AGENT });
  return {
    kind: DestinationKind.http,
    prepare: (delivery, nowMs) => preparer.prepare(delivery, nowMs),
    async send(request, abort) {
      // (the worker's handles come from newAbort below: AttemptAbort, which undici takes;
      // the sender reads the request's fields by name, so the success rule rides along)
      const handle = abort as AttemptAbort;
      if (!request.oauth2) {
        const sent = await sender.send({ ...request, abort: handle });
        return httpOutcome(applySuccessRule(sent, request.successRule));
      }
      return httpOutcome(await sendWithToken(sender, tokens, request, handle));
    },
    newAbort: () => new AttemptAbort(),
    // the sender is shared and closed by its owner
    close: async () => {},
  };
}

/** An OAuth2 endpoint's attempt (docs/oauth2.md): a token, the request, a retry after a 401. */
async function sendWithToken(
  sender: HttpSender,
  tokens: OAuth2Tokens,
  request: HttpRequest,
  abort: AttemptAbort,
): Promise<AttemptResult> {
  const creds = request.oauth2!;
  const deadline = performance.now() + request.timeoutMs;
  const left = () => Math.max(1, Math.round(deadline - performance.now()));
  const { oauth2: _, ...plain } = request;
  let used: string | null = null;
  const attempt = async (): Promise<AttemptResult> => {
    const answer = await tokens.token(creds, {
      timeoutMs: left(),
      abort,
      ...(request.egress && { egress: request.egress }),
    });
    if (!answer.ok) return answer.result;
    used = answer.token;
    const sent = await sender.send({
      ...plain,
      headers: withBearer(request.headers, answer.token),
      timeoutMs: left(),
      abort,
    });
    return masked(applySuccessRule(sent, request.successRule), answer.token);
  };
  const first = await attempt();
  if (first.statusCode !== 401 || used === null || abort.aborted) return first;
  // the receiver refused the token: drop it (unless another attempt did already) and try
  // once more with a new one
  tokens.invalidate(creds, used);
  return attempt();
}

/** The request's headers with the token as its Authorization (any custom one replaced). */
function withBearer(headers: Record<string, string>, token: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers))
    if (name.toLowerCase() !== "authorization") out[name] = value;
  out.authorization = `Bearer ${token}`;
  return out;
}

/** A receiver's answer that echoes the token shows *** in its place. */
function masked(result: AttemptResult, token: string): AttemptResult {
  const hide = (text: string | null) =>
    text?.includes(token) ? text.split(token).join("***") : text;
  return { ...result, responseBody: hide(result.responseBody), error: hide(result.error) };
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
