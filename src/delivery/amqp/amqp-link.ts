/**
 * One endpoint's connection to its RabbitMQ broker: an AMQP connection with one confirm
 * channel, shared by every publish to that endpoint (docs/destinations.md). Opened on the
 * first publish, to a vetted address of the broker's host (delivery/broker-outcome.ts);
 * when the connection or the channel closes (the broker went away, or closed the channel
 * over an error such as a missing exchange) the link is dead, and the next publish opens a
 * new one: that is the reconnect, paced by the retries' backoff.
 *
 * Publishes are mandatory: a message no queue is bound for comes back (basic.return) before
 * its confirm, and the link remembers its id so the publish can report it unroutable.
 */
import { type ChannelModel, type ConfirmChannel, connect, type Options } from "amqplib";
import type { SsrfGuard } from "../../security/ssrf-guard.ts";
import { brokerAddresses } from "../broker-outcome.ts";
import type { AmqpTarget } from "../broker-target.ts";

/** Heartbeat the broker and hookrelay agree on, seconds: a dead peer is noticed within 2x. */
const HEARTBEAT_S = 30;

export interface AmqpLink {
  /** false once its connection or channel closed: open a new one */
  readonly alive: boolean;
  /** the error the broker closed the channel or connection with, if it did */
  readonly closeError: Error | null;
  channel: ConfirmChannel;
  /** true (once) when the broker returned the message with this id as unroutable */
  takeReturned(messageId: string): boolean;
  close(): Promise<void>;
}

/** Opens a link: the first vetted address that accepts a TCP connection wins. */
export async function openAmqpLink(
  guard: SsrfGuard,
  target: AmqpTarget,
  connectTimeoutMs: number,
): Promise<AmqpLink> {
  const addresses = await brokerAddresses(guard, target.hostname);
  let model: ChannelModel | undefined;
  let lastError: unknown;
  for (const address of addresses) {
    const options: Options.Connect = {
      protocol: target.tls ? "amqps" : "amqp",
      hostname: address,
      port: target.port,
      vhost: target.vhost,
      heartbeat: HEARTBEAT_S,
      // amqplib's defaults are guest/guest; an endpoint without a user logs in as that too
      ...(target.username !== null && { username: target.username }),
      ...(target.password !== null && { password: target.password }),
    };
    try {
      model = await connect(options, {
        timeout: connectTimeoutMs,
        noDelay: true,
        clientProperties: { connection_name: "hookrelay" },
        // TLS checks the certificate against the name, not the vetted address dialled
        ...(target.tls && { servername: target.hostname }),
      });
      break;
    } catch (err) {
      lastError = err;
      // only a refused or unreachable address is worth the next one; a broker that
      // answered (credentials, vhost) answers the same on every address
      const code = (err as { code?: unknown }).code;
      if (code !== "ECONNREFUSED" && code !== "EHOSTUNREACH" && code !== "ETIMEDOUT") throw err;
    }
  }
  if (model === undefined) throw lastError;
  return linkOver(model);
}

async function linkOver(model: ChannelModel): Promise<AmqpLink> {
  let alive = true;
  let closeError: Error | null = null;
  const returned = new Set<string>();
  // An 'error' without a listener would throw out of the socket's handler and end the
  // process: every error is kept, as the reason the link died.
  model.on("error", (err: Error) => {
    closeError ??= err;
  });
  model.on("close", (err?: Error) => {
    alive = false;
    if (err) closeError ??= err;
  });
  let channel: ConfirmChannel;
  try {
    channel = await model.createConfirmChannel();
  } catch (err) {
    await model.close().catch(() => {});
    throw err;
  }
  channel.on("error", (err: Error) => {
    closeError ??= err;
  });
  channel.on("close", () => {
    alive = false;
  });
  channel.on("return", (message: { properties: { messageId?: string } }) => {
    if (message.properties.messageId) returned.add(message.properties.messageId);
  });
  return {
    get alive() {
      return alive;
    },
    get closeError() {
      return closeError;
    },
    channel,
    takeReturned: (messageId) => returned.delete(messageId),
    async close() {
      alive = false;
      // closing the connection closes its channel; an already closed one throws
      await model.close().catch(() => {});
    },
  };
}
