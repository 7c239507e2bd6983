/**
 * NATS JetStream as a transport (delivery/transport.ts; docs/destinations.md). prepare: the
 * signed message (delivery/broker-message.ts). send: a JetStream publish on the endpoint's
 * connection, the message id as `Nats-Msg-Id` (the stream drops a repeat within its
 * duplicate window and acks it as a duplicate) and the Standard Webhooks headers as message
 * headers; it counts as delivered only when the stream acks it (a PubAck with its stream
 * and sequence), within the endpoint's timeout.
 *
 * One connection per endpoint (nats-link.ts), kept by delivery/broker-links.ts: when it
 * closes, the next publish opens a new one.
 *
 * What a failure is (retried unless said): the SSRF guard's refusal (dead letter), network
 * trouble (`connection`, `dns`, `timeout`), refused credentials or a subject the user may
 * not publish to (`credentials`, dead letter), no stream for the subject or another stream
 * than the endpoint expects (`broker_refused`).
 */

import { performance } from "node:perf_hooks";
import type { NatsDetail } from "../../domain/attempt-outcome.ts";
import { ErrorKind, Verdict } from "../../domain/retry-policy.ts";
import type { SecretBox } from "../../security/secret-box.ts";
import type { SsrfGuard } from "../../security/ssrf-guard.ts";
import { makeBrokerLinks } from "../broker-links.ts";
import { type BrokerMessage, makeBrokerMessagePreparer } from "../broker-message.ts";
import {
  type BrokerFailure,
  brokerOutcome,
  commonFailure,
  underDeadline,
} from "../broker-outcome.ts";
import type { NatsTarget } from "../broker-target.ts";
import { tlsFailureCode } from "../egress/tls-failure.ts";
import { AttemptAbort } from "../http-sender.ts";
import { DestinationKind, type Transport } from "../transport.ts";
import type { NatsLink } from "./nats-link.ts";

export interface NatsTransportOptions {
  /** opens signing secrets and broker passwords sealed at rest */
  secretBox: SecretBox;
  /** vets the server's host as HTTP receivers' are */
  ssrfGuard: SsrfGuard;
  /** connectTimeoutMs: how long connecting to the server may take, default 5_000 */
  connectTimeoutMs?: number;
  /**
   * idleCloseMs: a connection no publish used for this long, with none running, is closed
   * (delivery/broker-link-use.ts); the next publish opens a new one. Default 300_000
   */
  idleCloseMs?: number;
}

export type NatsMessage = BrokerMessage<NatsTarget>;

// The NATS client loads with a process's first NATS connection, not in every worker.
const openNatsLink: typeof import("./nats-link.ts").openNatsLink = async (...args) =>
  (await import("./nats-link.ts")).openNatsLink(...args);

const detailOf = (target: NatsTarget | null, eventType: string): NatsDetail => ({
  transport: "nats",
  subject: target?.subject ?? eventType,
  stream: target?.stream ?? null,
  seq: null,
  duplicate: false,
});

/** What a NATS error says, as an attempt failure (after commonFailure). */
export function natsFailure(err: unknown, subject: string): BrokerFailure {
  // the client wraps a failed TLS handshake (and others) in an error of its own
  const chained = (err as { chainedError?: unknown })?.chainedError;
  if (chained !== undefined && tlsFailureCode(chained) !== null)
    return natsFailure(chained, subject);
  const common = commonFailure(err);
  if (common) return common;
  // (the client quotes some of the server's -ERR texts: 'Authorization Violation')
  const text = (err instanceof Error ? err.message : String(err)).replace(/^'(.*)'$/, "$1");
  const code = String((err as { code?: unknown })?.code ?? "");
  if (/PERMISSIONS_VIOLATION|Permissions Violation/i.test(`${code} ${text}`)) {
    return {
      verdict: Verdict.permanent,
      kind: ErrorKind.credentials,
      message: /for Subscription/i.test(text)
        ? `the server does not let the user subscribe to its reply inbox (_INBOX.>), so no ack can come back: ${text}`
        : `the server does not let the user publish to subject "${subject}": ${text}`,
    };
  }
  if (
    /AUTHORIZATION_VIOLATION|AUTHENTICATION|BAD_CREDS|Authorization Violation/i.test(
      `${code} ${text}`,
    )
  ) {
    return {
      verdict: Verdict.permanent,
      kind: ErrorKind.credentials,
      message: `the server refused the credentials (the URL's user and password, or token): ${text}`,
    };
  }
  if (code === "503") {
    return {
      verdict: Verdict.transient,
      kind: ErrorKind.brokerRefused,
      message: `no JetStream stream stores subject "${subject}" (no responders)`,
    };
  }
  if (code === "TIMEOUT") {
    return {
      verdict: Verdict.transient,
      kind: ErrorKind.timeout,
      message: `the stream did not ack in time: ${text}`,
    };
  }
  if ((err as { api_error?: unknown })?.api_error !== undefined || /^\d{3}$/.test(code)) {
    return {
      verdict: Verdict.transient,
      kind: ErrorKind.brokerRefused,
      message: `the stream refused the message: ${text}`,
    };
  }
  return { verdict: Verdict.transient, kind: ErrorKind.connection, message: text };
}

export function makeNatsTransport(options: NatsTransportOptions): Transport<NatsMessage> {
  const connectTimeoutMs = options.connectTimeoutMs ?? 5_000;
  const preparer = makeBrokerMessagePreparer<NatsTarget>({
    kind: DestinationKind.nats,
    secretBox: options.secretBox,
    emptyDetail: detailOf,
  });
  const links = makeBrokerLinks<NatsLink>(options.idleCloseMs ?? 300_000);

  async function publish(message: NatsMessage, detail: NatsDetail, deadline: number) {
    const ack = await links.use(
      message.endpointId,
      message.linkKey,
      () => openNatsLink(options.ssrfGuard, message.target, message.tls, connectTimeoutMs),
      (link) =>
        link.publish(detail.subject, message.body, message.headers, {
          msgId: message.messageId,
          stream: detail.stream,
          timeoutMs: Math.max(1, Math.round(deadline - performance.now())),
        }),
    );
    detail.stream = ack.stream;
    detail.seq = ack.seq;
    detail.duplicate = ack.duplicate;
  }

  return {
    kind: DestinationKind.nats,
    prepare: (delivery, nowMs) => preparer.prepare(delivery, nowMs),
    async send(message, abort) {
      const startedAt = new Date();
      const t0 = performance.now();
      const detail = detailOf(message.target, message.eventType);
      try {
        await underDeadline(
          publish(message, detail, t0 + message.timeoutMs),
          message.timeoutMs,
          abort as AttemptAbort,
        );
        return brokerOutcome(startedAt, t0, null, null, detail);
      } catch (err) {
        return brokerOutcome(startedAt, t0, natsFailure(err, detail.subject), null, detail);
      }
    },
    newAbort: () => new AttemptAbort(),
    close: () => links.close(),
  };
}
