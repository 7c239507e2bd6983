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
import { makeLinkUse } from "../broker-link-use.ts";
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
import { type AmqpLink, openAmqpLink } from "./amqp-link.ts";

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

type Held = { key: string; link: Promise<AmqpLink> };

const detailOf = (target: AmqpTarget | null, eventType: string): AmqpDetail => ({
  transport: "amqp",
  exchange: target?.exchange ?? "",
  routingKey: target?.routingKey ?? eventType,
  confirmed: false,
});

/** What an AMQP error says, as an attempt failure (after commonFailure). */
export function amqpFailure(err: unknown): BrokerFailure {
  const common = commonFailure(err);
  if (common) return common;
  const text = err instanceof Error ? err.message : String(err);
  const code = (err as { code?: unknown })?.code;
  // (a virtual host the user may not open, or that does not exist, closes the handshake)
  if (
    /ACCESS.REFUSED|NOT_ALLOWED|\b403\b|\b530\b|ConnectionOpenOk; got <ConnectionClose/.test(
      text,
    ) ||
    code === 403 ||
    code === 530
  ) {
    return {
      verdict: Verdict.permanent,
      kind: ErrorKind.credentials,
      message: `the broker refused the credentials or the virtual host: ${text}`,
    };
  }
  if (code === 404 || /NOT_FOUND/.test(text)) {
    return {
      verdict: Verdict.transient,
      kind: ErrorKind.brokerRefused,
      message: `the broker refused the publish: ${text}`,
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
  /** per endpoint: its link (or the link being opened) and what it was opened for */
  const links = new Map<string, Held>();
  let closed = false;
  const use = makeLinkUse(options.idleCloseMs ?? 300_000, (endpointId) => {
    const held = links.get(endpointId);
    links.delete(endpointId);
    void held?.link.then((l) => l.close()).catch(() => {});
  });

  function linkFor(message: AmqpMessage): Promise<AmqpLink> {
    const key = `${message.url}\n${message.target.password ?? ""}`;
    const held = links.get(message.endpointId);
    if (held !== undefined && held.key === key) {
      // one being opened is shared (its failure is every waiter's); a dead one is replaced
      return held.link.then((link) => {
        if (link.alive) return link;
        void link.close();
        return reopen(message, key, held);
      });
    }
    // the endpoint's URL or password changed: its old link goes
    if (held !== undefined) void held.link.then((l) => l.close()).catch(() => {});
    return reopen(message, key, held);
  }

  /** A new link in place of `before`, unless another publish has made one already. */
  function reopen(message: AmqpMessage, key: string, before: Held | undefined): Promise<AmqpLink> {
    const current = links.get(message.endpointId);
    if (current !== undefined && current !== before && current.key === key) return current.link;
    const entry: Held = {
      key,
      link: openAmqpLink(options.ssrfGuard, message.target, connectTimeoutMs),
    };
    links.set(message.endpointId, entry);
    // a failed open is not kept: the next publish tries again
    entry.link.catch(() => {
      if (links.get(message.endpointId) === entry) links.delete(message.endpointId);
    });
    return entry.link;
  }

  async function publish(message: AmqpMessage, detail: AmqpDetail): Promise<void> {
    const link = await linkFor(message);
    if (closed) {
      await link.close();
      throw new BrokerAttemptError({
        verdict: Verdict.transient,
        kind: ErrorKind.connection,
        message: "the transport is closed",
      });
    }
    const err = await new Promise<unknown>((resolve) => {
      try {
        link.channel.publish(
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
          (e: unknown) => resolve(e),
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
      use.begin(message.endpointId);
      try {
        await underDeadline(publish(message, detail), message.timeoutMs, abort as AttemptAbort);
        return brokerOutcome(startedAt, t0, null, null, detail);
      } catch (err) {
        // (a link that died is replaced by the next publish: linkFor)
        return brokerOutcome(startedAt, t0, amqpFailure(err), null, detail);
      } finally {
        use.end(message.endpointId);
      }
    },
    newAbort: () => new AttemptAbort(),
    async close() {
      closed = true;
      use.stop();
      const held = [...links.values()];
      links.clear();
      await Promise.all(held.map((h) => h.link.then((l) => l.close()).catch(() => {})));
    },
  };
}
