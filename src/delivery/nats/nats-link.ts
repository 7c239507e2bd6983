/**
 * One endpoint's connection to its NATS server, and JetStream publishes on it
 * (docs/destinations.md). Opened on the first publish, to the vetted addresses of the
 * server's host (delivery/broker-outcome.ts), without the client's own reconnects or
 * cluster discovery (both would dial addresses the SSRF guard never saw).
 *
 * A publish is what the client's `jetstream().publish` sends (the message with its
 * `Nats-Msg-Id` and, when the endpoint names one, `Nats-Expected-Stream` header, and a
 * reply subject for the stream's PubAck), but the acks come back through one wildcard
 * inbox subscription per connection, matched by their reply token, instead of one request
 * object, timer and promise chain per publish in the client (whose cancel also builds an
 * Error with its stack for every successful request, 7% of the worker's CPU in scenario 17
 * by itself; docs/performance.md). What an answer means is read as the client reads it:
 * an empty 503 status is "no responders" (no stream stores the subject), a JSON `error` is
 * the stream's refusal, otherwise the PubAck.
 */
import {
  connect,
  createInbox,
  type Msg,
  type MsgHdrs,
  type NatsConnection,
  type TlsOptions,
} from "nats";
import { ErrorKind, Verdict } from "../../domain/retry-policy.ts";
import type { SsrfGuard } from "../../security/ssrf-guard.ts";
import type { BrokerLink } from "../broker-links.ts";
import type { BrokerTls } from "../broker-message.ts";
import { BrokerAttemptError, brokerAddresses } from "../broker-outcome.ts";
import type { NatsTarget } from "../broker-target.ts";

export interface PubAck {
  stream: string;
  seq: number;
  duplicate: boolean;
}

export interface NatsLink extends BrokerLink {
  /** Publishes to the stream; resolves with its ack, rejects within `timeoutMs` at most. */
  publish(
    subject: string,
    body: Uint8Array,
    headers: Record<string, string>,
    options: { msgId: string; stream: string | null; timeoutMs: number },
  ): Promise<PubAck>;
}

/** An error as natsFailure (nats-transport.ts) reads the client's: by its code. */
class NatsAnswerError extends Error {
  constructor(
    message: string,
    readonly code: string,
    readonly api_error?: unknown,
  ) {
    super(message);
  }
}

interface Pending {
  subject: string;
  deadline: number;
  resolve(ack: PubAck): void;
  reject(err: Error): void;
}

/** How often publishes whose ack never came are given up (at their deadline, or after). */
const SWEEP_MS = 1_000;

/** host:port as the client reads a server, brackets around an IPv6 address. */
const serverOf = (address: string, port: number) =>
  `${address.includes(":") ? `[${address}]` : address}:${port}`;

/**
 * Opens a link. Over TLS (a `tls://` url) the connection is upgraded after the server's
 * INFO, as NATS does, and the server's certificate is checked against the url's host name
 * (not the vetted address dialled); the endpoint's `tlsCa` replaces the system's CAs and its
 * client certificate is presented when the server asks for one, as for amqps.
 */
export async function openNatsLink(
  guard: SsrfGuard,
  target: NatsTarget,
  tls: BrokerTls | null,
  connectTimeoutMs: number,
): Promise<NatsLink> {
  const addresses = await brokerAddresses(guard, target.hostname);
  const connection = await connect({
    servers: addresses.map((a) => serverOf(a, target.port)),
    name: "hookrelay",
    timeout: connectTimeoutMs,
    reconnect: false,
    ignoreClusterUpdates: true,
    noRandomize: true,
    noAsyncTraces: true,
    // a password without a user (nats://:TOKEN@host) is a token; the password is sealed
    // at rest and masked, which a token in the user's place would not be
    ...(target.username !== null && { user: target.username }),
    ...(target.password !== null &&
      (target.username === null ? { token: target.password } : { pass: target.password })),
    ...(target.tls && {
      // (the client hands these to tls.connect as they are; its type leaves servername out)
      tls: {
        servername: target.hostname,
        ...(tls?.ca && { ca: tls.ca }),
        ...(tls?.cert && { cert: tls.cert, key: tls.key ?? undefined }),
      } as TlsOptions,
    }),
  }).catch((err: unknown) => {
    throw target.tls ? refusedAfterHandshake(err) : err;
  });
  return linkOver(connection);
}

/**
 * Under TLS 1.3 a server that refuses the client's certificate (none, or another CA's) says
 * so only after the handshake, and then closes the connection: the client's next write (its
 * CONNECT) fails with a reset before the alert is read. A connection over TLS reset while
 * it opens is reported as that, a `tls` failure, rather than as network trouble.
 */
function refusedAfterHandshake(err: unknown): unknown {
  const code = (err as { code?: unknown })?.code;
  if (code !== "ECONNRESET" && code !== "EPIPE") return err;
  return new BrokerAttemptError(
    {
      verdict: Verdict.transient,
      kind: ErrorKind.tls,
      message: `TLS failed (${code}): the server closed the connection right after the TLS handshake; it may require a client certificate, or not trust ours (an endpoint's tlsClientCert): ${(err as Error).message}`,
    },
    { cause: err },
  );
}

function linkOver(connection: NatsConnection): NatsLink {
  const prefix = createInbox();
  const pending = new Map<string, Pending>();
  let next = 0;
  let alive = true;
  /**
   * The server refused the inbox subscription (the user may not subscribe to `_INBOX.>`):
   * no ack can ever come back on this connection, so every publish fails with that refusal
   * at once instead of waiting for its timeout, and the connection is closed (the next
   * attempt opens a new one and finds out whether the permissions changed).
   */
  let refused: Error | null = null;

  const failAll = (err: Error, which: (p: Pending) => boolean = () => true) => {
    for (const [token, p] of pending) {
      if (!which(p)) continue;
      pending.delete(token);
      p.reject(err);
    }
  };

  connection.subscribe(`${prefix}.*`, {
    callback: (err, msg) => {
      if (err) {
        refused = err;
        failAll(err);
        void connection.close().catch(() => {});
        return;
      }
      const token = msg.subject.slice(prefix.length + 1);
      const p = pending.get(token);
      if (p === undefined) return;
      pending.delete(token);
      try {
        p.resolve(ackOf(msg));
      } catch (e) {
        p.reject(e as Error);
      }
    },
  });
  // a publish the server's permissions refuse is answered by an -ERR, not on the inbox
  void (async () => {
    for await (const s of connection.status()) {
      const ctx = (s as { permissionContext?: { operation: string; subject: string } })
        .permissionContext;
      if (s.type === "error" && ctx?.operation === "publish") {
        const err = new NatsAnswerError(
          `Permissions Violation for Publish to "${ctx.subject}"`,
          "PERMISSIONS_VIOLATION",
        );
        failAll(err, (p) => p.subject === ctx.subject);
      }
    }
  })().catch(() => {});
  const sweep = setInterval(() => {
    const now = performance.now();
    failAll(
      new NatsAnswerError("the stream did not ack in time", "TIMEOUT"),
      (p) => p.deadline <= now,
    );
  }, SWEEP_MS);
  sweep.unref();
  void connection.closed().then((err) => {
    alive = false;
    clearInterval(sweep);
    failAll(
      err instanceof Error ? err : new NatsAnswerError("connection closed", "CONNECTION_CLOSED"),
    );
  });

  return {
    get alive() {
      return alive && refused === null;
    },
    publish(subject, body, headers, options) {
      if (refused !== null) return Promise.reject(refused);
      const h = headerBlock(headers, options.msgId, options.stream);
      const token = String(next++);
      return new Promise<PubAck>((resolve, reject) => {
        pending.set(token, {
          subject,
          deadline: performance.now() + options.timeoutMs,
          resolve,
          reject,
        });
        try {
          connection.publish(subject, body, { reply: `${prefix}.${token}`, headers: h });
        } catch (err) {
          pending.delete(token);
          reject(err);
        }
      });
    },
    async close() {
      alive = false;
      await connection.close().catch(() => {});
    },
  };
}

const CR_LF = /[\r\n]/;

/**
 * The message's headers as the client's own headers object puts them on the wire
 * (`NATS/1.0`, then `name: value` lines, then an empty line), made in one string: the
 * client's object validates and copies each header through several maps and arrays, a few
 * percent of the worker's CPU per publish. The client only asks it to `encode()`. Names
 * are hookrelay's or an endpoint's custom headers, checked when saved (no CR, LF or
 * colon); a value with CR or LF is refused here as the client would.
 */
function headerBlock(
  headers: Record<string, string>,
  msgId: string,
  stream: string | null,
): MsgHdrs {
  let text = "NATS/1.0";
  for (const name in headers) {
    const value = headers[name]!;
    if (CR_LF.test(value)) throw new Error(`header ${name}'s value holds CR or LF`);
    text += `\r\n${name}: ${value.trim()}`;
  }
  text += `\r\nNats-Msg-Id: ${msgId}`;
  if (stream !== null) text += `\r\nNats-Expected-Stream: ${stream}`;
  const bytes = Buffer.from(`${text}\r\n\r\n`);
  return { encode: () => bytes } as unknown as MsgHdrs;
}

/** The stream's answer to a publish, as the PubAck or the error it says. */
function ackOf(msg: Msg): PubAck {
  if (msg.data.length === 0 && msg.headers?.code === 503) {
    throw new NatsAnswerError("no responders", "503");
  }
  const answer = JSON.parse(
    Buffer.from(msg.data.buffer, msg.data.byteOffset, msg.data.length).toString(),
  ) as {
    error?: { code?: number; err_code?: number; description?: string };
    stream?: string;
    seq?: number;
    duplicate?: boolean;
  };
  if (answer.error !== undefined) {
    throw new NatsAnswerError(
      answer.error.description ?? "the stream refused the message",
      String(answer.error.code ?? 400),
      answer.error,
    );
  }
  if (!answer.stream) throw new NatsAnswerError("invalid JetStream ack", "JS_INVALID_ACK");
  return { stream: answer.stream, seq: answer.seq ?? 0, duplicate: answer.duplicate === true };
}
