/**
 * RabbitMQ (AMQP 0-9-1) as a transport (delivery/transport.ts; docs/destinations.md).
 * prepare: the signed message (delivery/broker-message.ts). send: a mandatory, persistent
 * publish on the endpoint's confirm channel (amqp-link.ts), the message id as the AMQP
 * message-id property and the Standard Webhooks headers as message headers; it counts as
 * delivered only when the broker confirms it (basic.ack), within the endpoint's timeout.
 *
 * What a failure is (retried unless said): the SSRF guard's refusal (dead letter), DNS or
 * network trouble (`connection`, `dns`, `timeout`), refused credentials or a virtual host
 * the user may not open (`credentials`, dead letter, as HTTP's 401/403), a nack, a return
 * (no queue bound for the routing key) or a missing exchange (`broker_refused`). Nothing of
 * a broker's failure escapes as an exception: each is an attempt's outcome.
 */
import { performance } from "node:perf_hooks";
import type { AmqpDetail } from "../../domain/attempt-outcome.ts";
import { ErrorKind, Verdict } from "../../domain/retry-policy.ts";
import type { SecretBox } from "../../security/secret-box.ts";
import type { SsrfGuard } from "../../security/ssrf-guard.ts";
import { makeBrokerLinks } from "../broker-links.ts";
import { type BrokerMessage, makeBrokerMessagePreparer } from "../broker-message.ts";
import {
  BrokerAttemptError,
  type BrokerFailure,
  brokerOutcome,
  commonFailure,
  underDeadline,
} from "../broker-outcome.ts";
import type { AmqpTarget } from "../broker-target.ts";
import { AttemptAbort } from "../http-sender.ts";
import { DestinationKind, type Transport } from "../transport.ts";
import type { AmqpLink } from "./amqp-link.ts";

export interface AmqpTransportOptions {
  /** opens signing secrets and broker passwords sealed at rest */
  secretBox: SecretBox;
  /** vets the broker's host as HTTP receivers' are */
  ssrfGuard: SsrfGuard;
  /** connectTimeoutMs: how long a TCP connect to the broker may take, default 5_000 */
  connectTimeoutMs?: number;
  /**
   * idleCloseMs: a connection no publish used for this long, with none running, is closed
   * (delivery/broker-link-use.ts); the next publish opens a new one. Default 300_000
   */
  idleCloseMs?: number;
}

export type AmqpMessage = BrokerMessage<AmqpTarget>;

// amqplib loads with a process's first RabbitMQ connection, not in every worker.
const openAmqpLink: typeof import("./amqp-link.ts").openAmqpLink = async (...args) =>
  (await import("./amqp-link.ts")).openAmqpLink(...args);

const detailOf = (target: AmqpTarget | null, eventType: string): AmqpDetail => ({
  transport: "amqp",
  exchange: target?.exchange ?? "",
  routingKey: target?.routingKey ?? eventType,
  confirmed: false,
});

/** The broker's own words in an amqplib error: `with message "..."`, else the whole text. */
const brokerText = (text: string) => /with message "(.*)"/.exec(text)?.[1] ?? text;

/**
 * What an AMQP error says, as an attempt failure (after commonFailure). `vhost`: the
 * endpoint's virtual host, named when the broker refused to open it.
 */
export function amqpFailure(err: unknown, vhost?: string): BrokerFailure {
  const common = commonFailure(err);
  if (common) return common;
  const text = err instanceof Error ? err.message : String(err);
  const code = (err as { code?: unknown })?.code;
  // A virtual host that does not exist, or that the user may not open, closes the
  // connection in answer to connection.open, after the login was accepted; amqplib keeps
  // only that (its error drops the broker's reply text).
  if (/ConnectionOpenOk; got <ConnectionClose/.test(text) || code === 530) {
    const which = vhost === undefined ? "the virtual host" : `virtual host "${vhost}"`;
    return {
      verdict: Verdict.permanent,
      kind: ErrorKind.credentials,
      message: `the broker refused to open ${which}: it does not exist or the user may not open it (${brokerText(text)})`,
    };
  }
  if (/Handshake terminated by server: 403|ACCESS.REFUSED - Login/.test(text)) {
    return {
      verdict: Verdict.permanent,
      kind: ErrorKind.credentials,
      message: `the broker refused the credentials (the URL's user and password): ${brokerText(text)}`,
    };
  }
  if (/ACCESS.REFUSED|NOT_ALLOWED|\b403\b|\b530\b/.test(text) || code === 403) {
    return {
      verdict: Verdict.permanent,
      kind: ErrorKind.credentials,
      message: `the broker does not let the user publish there: ${brokerText(text)}`,
    };
  }
  if (code === 404 || /NOT_FOUND/.test(text)) {
    return {
      verdict: Verdict.transient,
      kind: ErrorKind.brokerRefused,
      message: `the broker refused the publish: ${brokerText(text)}`,
    };
  }
  return { verdict: Verdict.transient, kind: ErrorKind.connection, message: text };
}

export function makeAmqpTransport(options: AmqpTransportOptions): Transport<AmqpMessage> {
  const connectTimeoutMs = options.connectTimeoutMs ?? 5_000;
  const preparer = makeBrokerMessagePreparer<AmqpTarget>({
    kind: DestinationKind.amqp,
    secretBox: options.secretBox,
    emptyDetail: detailOf,
  });
  const links = makeBrokerLinks<AmqpLink>(options.idleCloseMs ?? 300_000);

  async function publish(link: AmqpLink, message: AmqpMessage, detail: AmqpDetail) {
    const err = await new Promise<unknown>((resolve) => {
      try {
        link.publish(
          detail.exchange,
          detail.routingKey,
          message.body,
          {
            messageId: message.messageId,
            headers: message.headers,
            contentType: "application/json",
            type: message.eventType,
            appId: "hookrelay",
            timestamp: Number(message.headers["webhook-timestamp"]),
            persistent: true,
            mandatory: true,
          },
          resolve,
        );
      } catch (e) {
        // the channel closed under us (amqplib throws on a closed channel)
        resolve(e);
      }
    });
    if (err) throw link.closeError ?? err;
    if (link.takeReturned(message.messageId)) {
      detail.returned = true;
      throw new BrokerAttemptError({
        verdict: Verdict.transient,
        kind: ErrorKind.brokerRefused,
        message: `the broker returned the message: no queue is bound to exchange "${detail.exchange}" for routing key "${detail.routingKey}"`,
      });
    }
    detail.confirmed = true;
  }

  return {
    kind: DestinationKind.amqp,
    prepare: (delivery, nowMs) => preparer.prepare(delivery, nowMs),
    async send(message, abort) {
      const startedAt = new Date();
      const t0 = performance.now();
      const detail = detailOf(message.target, message.eventType);
      try {
        await underDeadline(
          links.use(
            message.endpointId,
            message.linkKey,
            () => openAmqpLink(options.ssrfGuard, message.target, message.tls, connectTimeoutMs),
            (link) => publish(link, message, detail),
          ),
          message.timeoutMs,
          abort as AttemptAbort,
        );
        return brokerOutcome(startedAt, t0, null, null, detail);
      } catch (err) {
        // (a link that died is replaced by the next publish: broker-links.ts)
        return brokerOutcome(startedAt, t0, amqpFailure(err, message.target.vhost), null, detail);
      }
    },
    newAbort: () => new AttemptAbort(),
    close: () => links.close(),
  };
}
