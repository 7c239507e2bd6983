/**
 * The outcome of one delivery attempt, whatever carried it (docs/architecture.md, the
 * transport seam): what a transport's send returns (delivery/transport.ts) and the worker
 * turns into a result (worker/record-attempt.ts). The transport's own detail is a part of
 * it, one shape per transport.
 */
import type { ErrorKind, Verdict } from "./retry-policy.ts";

/**
 * What a transport adds to an outcome of its own. HTTP: the response's status code (null
 * when no response came), stored in attempts.status_code. The others are stored as they
 * are in attempts.detail (docs/destinations.md).
 */
export type TransportDetail = HttpDetail | AmqpDetail | NatsDetail;

export type HttpDetail = { transport: "http"; statusCode: number | null };

/** RabbitMQ (AMQP 0-9-1): where the message was published and what the broker said. */
export type AmqpDetail = {
  transport: "amqp";
  exchange: string;
  routingKey: string;
  /** the broker confirmed the publish (an ack); false: nacked, returned or never answered */
  confirmed: boolean;
  /** the broker returned it as unroutable (no queue bound for its routing key) */
  returned?: boolean;
};

/** NATS JetStream: the subject and what the stream's ack said. */
export type NatsDetail = {
  transport: "nats";
  subject: string;
  /** the stream that stored it (from its ack), or the one the endpoint expects */
  stream: string | null;
  /** the stream sequence of the stored message; null without an ack */
  seq: number | null;
  /** the stream had this message id already (its duplicate window): stored once */
  duplicate: boolean;
};

/** The outcome of one attempt, whatever carried it. */
export interface AttemptOutcome {
  /** when the attempt began (wall clock: stored) */
  startedAt: Date;
  /** monotonic milliseconds the attempt took */
  latencyMs: number;
  verdict: Verdict;
  /** why it failed (null on success): attempts.error_kind */
  errorKind: ErrorKind | null;
  /** a sentence for people, unmasked (the recorder masks it) */
  error: string | null;
  /**
   * What the destination answered, as readable text, for storage (attempts.response_body):
   * at most what the transport read; the recorder masks it, then keeps the first 1 KiB.
   */
  response: string | null;
  /** the destination asked to be left alone this long (HTTP Retry-After), in ms */
  retryAfterMs: number | null;
  detail: TransportDetail;
}
