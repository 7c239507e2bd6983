/**
 * The HTTP transport's prepare stage (delivery/transport.ts): turns a claimed delivery into
 * the signed HTTP request the sender makes (docs/delivery.md, Signing): the endpoint's method, URL and headers, the body, and
 * the Standard Webhooks headers signed with every secret that signs right now.
 *
 * Postback endpoints (README.md, Postbacks): a URL template is filled from the payload, the
 * message and the endpoint's URL token (delivery/url-template.ts); GET sends no body, and
 * `bodyFormat: "form"` sends the payload's top-level fields form-encoded. The signature
 * covers the body as sent (empty for GET).
 *
 * Nothing is sent when a secret or URL token cannot be opened (sealed under a key this
 * process lacks: a retried failure of kind `signing`), or when the payload lacks a field the
 * template needs (a dead letter of kind `missing_field`, unless the endpoint renders missing
 * fields empty), or when the message's payload was expunged (a dead letter of kind
 * `expunged`): those are attempt outcomes of their own (docs/delivery.md, What is retried).
 */
import { isExpunged } from "../../domain/expunged-payload.ts";
import { ErrorKind, Verdict } from "../../domain/retry-policy.ts";
import type { Logger } from "../../logger.ts";
import type { SecretBox } from "../../security/secret-box.ts";
import type { EgressRoute } from "../egress/egress-dispatchers.ts";
import { sendableHeaders } from "../endpoint-headers.ts";
import { FORM_CONTENT_TYPE, formBody } from "../form-body.ts";
import type { OutboundRequest } from "../http-sender.ts";
import { type SigningKey, signatureHeader } from "../sign.ts";
import { signingKeyOf } from "../signing-key.ts";
import type { SuccessRule } from "../success-rule.ts";
import { notAttempted, type OutboundDelivery, type Preparation } from "../transport.ts";
import {
  isTemplate,
  parseUrlTemplate,
  renderUrlTemplate,
  type UrlTemplate,
} from "../url-template.ts";
import { makeEgressRoutes } from "./egress-route.ts";
import type { OAuth2Credentials } from "./oauth2-token.ts";

export const USER_AGENT = "hookrelay/0.1 (+webhook delivery)";

/** A prepared HTTP attempt: the request as the sender takes it, and the endpoint's success rule. */
export interface HttpRequest extends Omit<OutboundRequest, "abort"> {
  successRule: SuccessRule | null;
  /** OAuth2 client credentials, the secret opened: send gets a token (docs/oauth2.md) */
  oauth2?: OAuth2Credentials;
}

export interface RequestPreparer {
  /** `nowMs`: the send time (the signature's timestamp), default Date.now() */
  prepare(claim: OutboundDelivery, nowMs?: number): Preparation<HttpRequest>;
}

const NO_STATUS = { transport: "http", statusCode: null } as const;

// Keys derived from secrets (HMAC keys and Ed25519 private keys alike: the opened text's
// prefix says which), opened URL tokens and parsed templates are kept: each is worked out
// once, not per request. A cache is dropped whole when it grows past this (rotations leave
// old secrets behind).
const CACHE_MAX = 10_000;

function cached<V>(cache: Map<string, V>, key: string, make: () => V): V {
  let value = cache.get(key);
  if (value === undefined) {
    value = make();
    if (cache.size > CACHE_MAX) cache.clear();
    cache.set(key, value);
  }
  return value;
}

export function makeRequestPreparer(deps: {
  secretBox: SecretBox;
  /** field names whose values a rendered URL masks in attempt rows (security/redact.ts) */
  isSensitive?: (name: string) => boolean;
  /** told once per endpoint about custom headers dropped at send time */
  logger?: Pick<Logger, "warn">;
}): RequestPreparer {
  const keyCache = new Map<string, SigningKey>();
  const egressRoutes = makeEgressRoutes(deps.secretBox);
  const tokenCache = new Map<string, string>();
  const oauth2Secrets = new Map<string, string>();
  const templates = new Map<string, UrlTemplate | Error>();
  const isSensitive = deps.isSensitive ?? (() => false);
  const droppedLogged = new Set<string>();

  const keysFor = (secrets: string[]) =>
    secrets.map((secret) =>
      cached(keyCache, secret, () => signingKeyOf(deps.secretBox.open(secret))),
    );

  const templateOf = (url: string) =>
    cached(templates, url, () => {
      try {
        return parseUrlTemplate(url);
      } catch (err) {
        return err as Error;
      }
    });

  return {
    prepare(claim, nowMs = Date.now()) {
      // an expunged message's content is gone: a delivery of it (a retry, a resend, a
      // requeue, a replay) is never sent, whatever path brought it here
      if (isExpunged(claim.payload)) {
        return notSent(ErrorKind.expunged, "the message's payload was expunged; nothing was sent");
      }
      const timestamp = Math.floor(nowMs / 1000);
      let keys: SigningKey[];
      let token: string | null = null;
      try {
        keys = keysFor(claim.secrets);
      } catch (error) {
        return signingFailure("signing secret", error);
      }
      try {
        if (claim.urlToken !== null)
          token = cached(tokenCache, claim.urlToken, () => deps.secretBox.open(claim.urlToken!));
      } catch (error) {
        return signingFailure("URL token", error);
      }

      let target: HttpRequest["target"];
      let shownUrl: string | null = null;
      let secrets: string[] = [];
      if (isTemplate(claim.url)) {
        const template = templateOf(claim.url);
        if (template instanceof Error) {
          // saved before templates were checked: it can never be sent
          return notSent(
            ErrorKind.invalidRequest,
            `the URL template does not parse: ${template.message}`,
          );
        }
        const rendered = renderUrlTemplate(
          template,
          {
            payload: claim.payload,
            messageId: claim.messageId,
            eventType: claim.eventType,
            eventId: claim.eventId,
            attempt: claim.attemptCount + 1,
            timestamp,
            token,
          },
          { missing: claim.missingFields, sensitive: isSensitive },
        );
        if (!rendered.ok) {
          return notSent(
            ErrorKind.missingField,
            `the URL template's ${rendered.placeholder} ${rendered.why}; nothing was sent`,
          );
        }
        target = { origin: template.origin, path: rendered.path };
        shownUrl = rendered.shown;
        secrets = rendered.secrets;
      }

      let body: string | null;
      let contentType: string | null;
      if (claim.method === "GET") {
        body = null;
        contentType = null;
      } else if (claim.bodyFormat === "form") {
        body = formBody(claim.payload);
        contentType = FORM_CONTENT_TYPE;
        if (body === null) {
          return notSent(
            ErrorKind.invalidRequest,
            "a form body is made of the payload's top-level fields, and this payload is not a JSON object; nothing was sent",
          );
        }
      } else {
        body = claim.payload;
        contentType = "application/json";
      }

      // Headers saved before the API refused them (Expect, Connection, ...) are dropped, so
      // the endpoint's deliveries still go out; a custom User-Agent replaces ours
      // (docs/delivery.md, Custom headers).
      const custom = sendableHeaders(claim.headers);
      if (custom.dropped.length > 0) {
        const key = `${claim.endpointId} ${custom.dropped.join(",")}`;
        if (!droppedLogged.has(key)) {
          if (droppedLogged.size > CACHE_MAX) droppedLogged.clear();
          droppedLogged.add(key);
          deps.logger?.warn(
            { endpointId: claim.endpointId, dropped: custom.dropped },
            "endpoint headers the sender controls were not sent",
          );
        }
      }
      const ownAgent = !Object.keys(custom.headers).some((n) => n.toLowerCase() === "user-agent");
      const headers: Record<string, string> = {
        ...custom.headers,
        ...(ownAgent && { "user-agent": USER_AGENT }),
        "webhook-id": claim.messageId,
        "webhook-timestamp": String(timestamp),
        "webhook-signature": signatureHeader(keys, claim.messageId, timestamp, body ?? ""),
      };
      if (contentType !== null) headers["content-type"] = contentType;
      // how the request leaves: a proxy, a pool, a client certificate (docs/egress.md)
      let egress: EgressRoute | undefined;
      try {
        if (claim.egress) egress = egressRoutes.routeOf(claim.egress);
      } catch (error) {
        return signingFailure("egress setting (proxy URL or client certificate)", error);
      }
      // OAuth2 client credentials (docs/oauth2.md): send fetches or reuses the token
      let oauth2: OAuth2Credentials | undefined;
      if (claim.oauth2) {
        const o = claim.oauth2;
        try {
          const clientSecret = cached(oauth2Secrets, o.clientSecret, () =>
            deps.secretBox.open(o.clientSecret),
          );
          const key = [
            claim.endpointId,
            o.tokenUrl,
            o.clientId,
            o.clientSecret,
            o.scope ?? "",
            o.audience ?? "",
            o.authMethod,
          ].join("\u0000");
          oauth2 = { ...o, clientSecret, key };
          // (an answer or error that echoes the secret shows *** in the attempt row)
          secrets = [...secrets, clientSecret];
        } catch (error) {
          return signingFailure("OAuth2 client secret", error);
        }
      }
      // the attempt's trace context, when the endpoint propagates it (docs/telemetry.md)
      if (claim.sendTraceparent) headers.traceparent = claim.sendTraceparent;
      return {
        ok: true,
        request: {
          url: claim.url,
          method: claim.method,
          ...(target && { target }),
          headers,
          body,
          timeoutMs: claim.timeoutMs,
          ...(egress && { egress }),
          ...(oauth2 && { oauth2 }),
          successRule: claim.successRule,
        },
        shown: { shownUrl, secrets },
      };
    },
  };
}

/** The outcome of an attempt that could not be signed (no request was sent): retried. */
function signingFailure(what: string, error: unknown): Preparation<HttpRequest> {
  return {
    ok: false,
    error,
    note: `${what} could not be opened`,
    outcome: notAttempted(
      Verdict.transient,
      ErrorKind.signing,
      `${what} could not be opened: ${(error as Error).message}`,
      NO_STATUS,
    ),
  };
}

/** A request that cannot be made from this message: permanent, nothing sent. */
function notSent(errorKind: ErrorKind, error: string): Preparation<HttpRequest> {
  return {
    ok: false,
    error: new Error(error),
    note: "nothing could be sent",
    outcome: notAttempted(Verdict.permanent, errorKind, error, NO_STATUS),
  };
}
