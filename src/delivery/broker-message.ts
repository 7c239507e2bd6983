/**
 * The prepare stage the broker transports share (delivery/amqp/, delivery/nats/): a claimed
 * delivery as the message to publish (docs/destinations.md). The body is the payload as
 * JSON, signed as an HTTP delivery is (Standard Webhooks: webhook-id = the message id,
 * webhook-timestamp, webhook-signature over the body), and the endpoint's custom headers
 * ride along as message headers. The broker URL is read and its password opened here.
 *
 * Nothing is published, as for HTTP (delivery/http/prepare-request.ts), when a secret or
 * the password cannot be opened (retried, kind `signing`), when the message's payload was
 * expunged, or when the stored URL no longer reads (both dead letters).
 */
import type { TransportDetail } from "../domain/attempt-outcome.ts";
import { isExpunged } from "../domain/expunged-payload.ts";
import { ErrorKind, Verdict } from "../domain/retry-policy.ts";
import type { SecretBox } from "../security/secret-box.ts";
import { type BrokerTarget, parseBrokerUrl } from "./broker-target.ts";
import { sendableHeaders } from "./endpoint-headers.ts";
import { type SigningKey, signatureHeader } from "./sign.ts";
import { signingKeyOf } from "./signing-key.ts";
import { notAttempted, type OutboundDelivery, type Preparation } from "./transport.ts";

/** A message ready to publish: its target, id, body and headers. */
export interface BrokerMessage<T extends BrokerTarget = BrokerTarget> {
  /** connections are kept per endpoint: one per endpoint and URL */
  endpointId: string;
  /** the stored URL (no password) */
  url: string;
  /** what the endpoint's connection is opened for: its URL, password and TLS files */
  linkKey: string;
  target: T;
  /** the endpoint's CA bundle and client certificate for a TLS connection (amqps) */
  tls: BrokerTls | null;
  /** the message id: the broker's de-duplication id */
  messageId: string;
  eventType: string;
  body: Buffer;
  headers: Record<string, string>;
  timeoutMs: number;
}

/** PEM texts, opened: null where the endpoint has none (the system's CAs, no client cert) */
export interface BrokerTls {
  ca: string | null;
  cert: string | null;
  key: string | null;
}

// Opened keys and passwords are worked out once; dropped whole past this many.
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

export interface BrokerMessagePreparer<T extends BrokerTarget> {
  prepare(delivery: OutboundDelivery, nowMs?: number): Preparation<BrokerMessage<T>>;
}

/**
 * A preparer for one broker kind; `emptyDetail` is the detail of an outcome where nothing
 * was published (for the delivery's target, as far as it reads).
 */
export function makeBrokerMessagePreparer<T extends BrokerTarget>(deps: {
  kind: T["kind"];
  secretBox: SecretBox;
  emptyDetail: (target: T | null, eventType: string) => TransportDetail;
}): BrokerMessagePreparer<T> {
  const keyCache = new Map<string, SigningKey>();
  const passwordCache = new Map<string, string>();
  const targets = new Map<string, T | Error>();
  const tlsCache = new Map<string, BrokerTls>();

  const failed = (
    verdict: Verdict,
    kind: ErrorKind,
    text: string,
    error: unknown,
    detail: TransportDetail,
  ): Preparation<BrokerMessage<T>> => ({
    ok: false,
    error,
    note: verdict === Verdict.permanent ? "nothing could be sent" : text,
    outcome: notAttempted(verdict, kind, text, detail),
  });

  /** A sealed value that does not open: retried (kind `signing`), nothing published. */
  const unopened = (what: string, error: unknown, target: T | null, eventType: string) =>
    failed(
      Verdict.transient,
      ErrorKind.signing,
      `${what} could not be opened: ${(error as Error).message}`,
      error,
      deps.emptyDetail(target, eventType),
    );

  return {
    prepare(delivery, nowMs = Date.now()) {
      let password: string | null = null;
      try {
        if (delivery.destinationSecret)
          password = cached(passwordCache, delivery.destinationSecret, () =>
            deps.secretBox.open(delivery.destinationSecret!),
          );
      } catch (error) {
        return unopened("the broker password", error, null, delivery.eventType);
      }
      const key = `${delivery.url}\n${password ?? ""}`;
      const target = cached(targets, key, () => {
        try {
          const parsed = parseBrokerUrl(delivery.url, password) as T;
          return parsed.kind === deps.kind
            ? parsed
            : new Error(`a ${parsed.kind} url reached the ${deps.kind} transport`);
        } catch (err) {
          return err as Error;
        }
      });
      if (target instanceof Error) {
        return failed(
          Verdict.permanent,
          ErrorKind.invalidRequest,
          `the broker url does not read: ${target.message}`,
          target,
          deps.emptyDetail(null, delivery.eventType),
        );
      }
      const egress = delivery.egress;
      let tls: BrokerTls | null = null;
      let linkKey = key;
      if (egress && (egress.tlsCa ?? egress.tlsClientCert) !== null) {
        // (sealed values differ whenever the plain ones do: they name the files)
        const tlsKey = `${egress.tlsCa ?? ""}\n${egress.tlsClientCert ?? ""}\n${egress.tlsClientKey ?? ""}`;
        try {
          tls = cached(tlsCache, tlsKey, () => ({
            ca: egress.tlsCa,
            cert: egress.tlsClientCert === null ? null : deps.secretBox.open(egress.tlsClientCert),
            key: egress.tlsClientKey === null ? null : deps.secretBox.open(egress.tlsClientKey),
          }));
        } catch (error) {
          return unopened("the client certificate", error, target, delivery.eventType);
        }
        linkKey = `${key}\n${tlsKey}`;
      }
      const detail = deps.emptyDetail(target, delivery.eventType);
      if (isExpunged(delivery.payload)) {
        const text = "the message's payload was expunged; nothing was sent";
        return failed(Verdict.permanent, ErrorKind.expunged, text, new Error(text), detail);
      }
      let keys: SigningKey[];
      try {
        keys = delivery.secrets.map((s) =>
          cached(keyCache, s, () => signingKeyOf(deps.secretBox.open(s))),
        );
      } catch (error) {
        const text = `signing secret could not be opened: ${(error as Error).message}`;
        return failed(Verdict.transient, ErrorKind.signing, text, error, detail);
      }
      const timestamp = Math.floor(nowMs / 1000);
      const headers: Record<string, string> = {
        ...sendableHeaders(delivery.headers).headers,
        "content-type": "application/json",
        "webhook-id": delivery.messageId,
        "webhook-timestamp": String(timestamp),
        "webhook-signature": signatureHeader(keys, delivery.messageId, timestamp, delivery.payload),
      };
      return {
        ok: true,
        request: {
          endpointId: delivery.endpointId,
          url: delivery.url,
          linkKey,
          target,
          tls,
          messageId: delivery.messageId,
          eventType: delivery.eventType,
          body: Buffer.from(delivery.payload),
          headers,
          timeoutMs: delivery.timeoutMs,
        },
        // the stored URL carries no password; the password is masked wherever echoed
        shown: { shownUrl: null, secrets: password === null ? [] : [password] },
      };
    },
  };
}
