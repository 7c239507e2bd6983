/**
 * The transport seam (docs/architecture.md, "The delivery pipeline"): how a claimed delivery
 * reaches its destination, in two typed stages, after Svix's prepare / call / handle:
 *
 * prepare  the claimed row → the request to make (signed, its target rendered), or at once
 *          the outcome of an attempt that cannot be made (a secret this process cannot
 *          open, a payload without a field the target needs). Synchronous, no I/O.
 * send     the prepared request under an abort handle → a transport-neutral outcome: a
 *          verdict, why it failed, when and how long, a pause hint for the whole endpoint,
 *          the text to store as the response, and the transport's own detail (for HTTP the
 *          status code).
 *
 * Handling the outcome (next state, retries, masking, the result write) is the worker's,
 * the same for every transport (worker/record-attempt.ts). A transport never touches the
 * database. The worker picks one per delivery by the endpoint's destination kind
 * (`transportFor`): "http" (delivery/http/http-transport.ts), "amqp"
 * (delivery/amqp/amqp-transport.ts) or "nats" (delivery/nats/nats-transport.ts).
 */
import type { OAuth2Column, SuccessRuleRow } from "../db/queries/endpoints.ts";
import type { AttemptOutcome, TransportDetail } from "../domain/attempt-outcome.ts";
import type { ErrorKind, Verdict } from "../domain/retry-policy.ts";

/**
 * The kinds of destination an endpoint may have (endpoints.destination_kind, from its URL's
 * scheme: docs/destinations.md); each is a module behind `Transport`.
 */
export const DestinationKind = { http: "http", amqp: "amqp", nats: "nats" } as const;
export type DestinationKind = (typeof DestinationKind)[keyof typeof DestinationKind];

/**
 * A claimed delivery as a transport reads it (queue/claim-deliveries.ts's ClaimedDelivery
 * is one, with the fields the queue and the recorder read besides).
 */
export interface OutboundDelivery {
  id: number;
  messageId: string;
  endpointId: string;
  /** attempts made before this one */
  attemptCount: number;
  eventType: string;
  /** the producer's eventId, if it gave one */
  eventId: string | null;
  payload: string;
  /** the endpoint's target (for HTTP its URL or URL template) */
  url: string;
  headers: Record<string, string>;
  timeoutMs: number;
  /** secrets that sign this request, newest first, as stored (sealed or plain) */
  secrets: string[];
  method: "POST" | "GET" | "PUT";
  bodyFormat: "json" | "form";
  /** the value of {$token}, sealed */
  urlToken: string | null;
  missingFields: "fail" | "empty";
  successRule: SuccessRuleRow | null;
  /** the message's W3C traceparent (docs/telemetry.md, "Traces"); absent or null: none */
  traceparent?: string | null;
  /** the endpoint sends its receiver a traceparent header (policy propagateTrace on) */
  propagateTrace?: boolean;
  /**
   * The traceparent header this attempt sends, set by the worker just before prepare (the
   * attempt span's context) when the endpoint propagates the trace; absent: none.
   */
  sendTraceparent?: string | null;
  /** The endpoint's destination kind. Absent: "http". */
  destinationKind?: DestinationKind;
  /** a broker destination's password, sealed (null: none; HTTP endpoints have none) */
  destinationSecret?: string | null;
  /**
   * How HTTP requests leave (docs/egress.md), as stored: absent when the endpoint has no
   * egress settings and its application no pool.
   */
  egress?: EndpointEgress;
  /**
   * OAuth2 client credentials (docs/oauth2.md), as stored (the secret sealed); absent or
   * null: none.
   */
  oauth2?: EndpointOAuth2 | null;
}

/** An endpoint's OAuth2 client credentials as the claim reads them (migration 0030). */
export interface EndpointOAuth2 extends OAuth2Column {
  /** the client secret, sealed */
  clientSecret: string;
}

/** An endpoint's egress settings as the claim reads them (migration 0028). */
export interface EndpointEgress {
  /** the endpoint's pool, else its application's */
  pool: string | null;
  /** the endpoint's own proxy, without its password */
  proxyUrl: string | null;
  /** its password, sealed */
  proxySecret: string | null;
  /** sealed */
  tlsClientCert: string | null;
  /** sealed */
  tlsClientKey: string | null;
  /** PEM */
  tlsCa: string | null;
}

/**
 * Aborts one attempt (the drain deadline, stop()). HTTP's AttemptAbort is one: an
 * EventEmitter undici takes as a signal, cheaper than an AbortController per attempt.
 */
export interface AbortHandle {
  readonly aborted: boolean;
  abort(reason?: Error): void;
}

/** Where a prepared attempt goes, as the attempt rows show it. */
export interface ShownTarget {
  /** the target with tokens and sensitive values masked; null: the endpoint's URL as saved */
  shownUrl: string | null;
  /** values the target carries, masked wherever an answer or error echoes them */
  secrets: readonly string[];
}

/** The request to make, or the outcome of an attempt that could not be made. */
export type Preparation<Request> =
  | { ok: true; request: Request; shown: ShownTarget }
  | {
      ok: false;
      /** for the log */
      error: unknown;
      /** the log line: what could not be done */
      note: string;
      outcome: AttemptOutcome;
    };

export interface Transport<Request = unknown> {
  readonly kind: DestinationKind;
  /** `nowMs`: the send time (signatures' timestamps), default Date.now() */
  prepare(delivery: OutboundDelivery, nowMs?: number): Preparation<Request>;
  /** Makes the attempt; never rejects (a failure is an outcome). */
  send(request: Request, abort: AbortHandle): Promise<AttemptOutcome>;
  /** A fresh abort handle for one attempt, of the kind `send` takes. */
  newAbort(): AbortHandle;
  close(): Promise<void>;
}

/** The transports a worker has, by destination kind; "http" is required. */
export type TransportRegistry = { readonly http: Transport } & Readonly<
  Partial<Record<DestinationKind, Transport>>
>;

/** The transport of a claimed delivery's endpoint. */
export function transportFor(registry: TransportRegistry, delivery: OutboundDelivery): Transport {
  const kind = delivery.destinationKind ?? DestinationKind.http;
  const transport = registry[kind];
  if (transport === undefined) throw new Error(`no transport for destinations of kind ${kind}`);
  return transport;
}

/** An outcome without an attempt: nothing was sent (prepare's immediate answers). */
export function notAttempted(
  verdict: Verdict,
  errorKind: ErrorKind,
  error: string,
  detail: TransportDetail,
): AttemptOutcome {
  return {
    startedAt: new Date(),
    latencyMs: 0,
    verdict,
    errorKind,
    error,
    response: null,
    retryAfterMs: null,
    detail,
  };
}
