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
 *
 * Waiting publishes leave in one write: amqplib's muxer writes each message to the socket
 * on its own (a system call per message, about a tenth of the worker's CPU in scenario 17,
 * docs/performance.md), so the link corks the socket around each of the muxer's rounds
 * (`batchWrites`): the round's messages (up to the socket's 16 KiB high-water mark) go out
 * in one writev when it ends. Nothing is held past the round.
 *
 * Over amqps the endpoint's CA bundle (its `tlsCa`) replaces the system's CAs and its
 * client certificate (`tlsClientCert`, `tlsClientKey`) is presented, as for HTTP
 * (docs/egress.md).
 */
import type { Socket } from "node:net";
import { type ChannelModel, type ConfirmChannel, connect, type Options } from "amqplib";
import type { SsrfGuard } from "../../security/ssrf-guard.ts";
import type { BrokerLink } from "../broker-links.ts";
import type { BrokerTls } from "../broker-message.ts";
import { brokerAddresses } from "../broker-outcome.ts";
import type { AmqpTarget } from "../broker-target.ts";

/** Heartbeat the broker and hookrelay agree on, seconds: a dead peer is noticed within 2x. */
const HEARTBEAT_S = 30;

export interface AmqpLink extends BrokerLink {
  /** the error the broker closed the channel or connection with, if it did */
  readonly closeError: Error | null;
  /** the confirm channel's publish (throws when the channel is closed) */
  publish: ConfirmChannel["publish"];
  /** true (once) when the broker returned the message with this id as unroutable */
  takeReturned(messageId: string): boolean;
}

/** Opens a link: the first vetted address that accepts a TCP connection wins. */
export async function openAmqpLink(
  guard: SsrfGuard,
  target: AmqpTarget,
  tls: BrokerTls | null,
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
        ...(target.tls && tls?.ca && { ca: tls.ca }),
        ...(target.tls && tls?.cert && { cert: tls.cert, key: tls.key ?? undefined }),
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
  batchWrites(model);
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
    publish: (exchange, routingKey, content, options, callback) =>
      channel.publish(exchange, routingKey, content, options, callback),
    takeReturned: (messageId) => returned.delete(messageId),
    async close() {
      alive = false;
      // closing the connection closes its channel; an already closed one throws
      await model.close().catch(() => {});
    },
  };
}

/**
 * Corks the connection's socket around each round of amqplib's muxer (its `_readIncoming`,
 * which writes every message waiting on the channels, one `write` each). Reaches into
 * amqplib 2's connection (`connection.stream`, `connection.muxer`); where they are not as
 * expected nothing changes, and each message is its own write as before.
 */
function batchWrites(model: ChannelModel): void {
  const connection = (
    model as unknown as {
      connection?: { stream?: Socket; muxer?: { _readIncoming?: () => void } };
    }
  ).connection;
  const socket = connection?.stream;
  const muxer = connection?.muxer;
  const round = muxer?._readIncoming;
  if (!socket || typeof socket.cork !== "function" || typeof round !== "function") return;
  muxer!._readIncoming = () => {
    socket.cork();
    try {
      round.call(muxer);
    } finally {
      socket.uncork();
    }
  };
}
