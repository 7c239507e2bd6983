/**
 * A broker destination's URL (docs/destinations.md): what an endpoint's `url` says when its
 * scheme is amqp, amqps, nats or tls, read into the target a broker transport connects and
 * publishes to. The password is never part of the stored URL: it is sealed apart
 * (endpoints.destination_secret) and given here opened.
 *
 *   amqp://user:pass@host:5672/vhost?exchange=hooks&routingKey=orders
 *   nats://user:pass@host:4222?subject=hooks.orders&stream=HOOKS
 *   tls://user:pass@host:4222?subject=hooks.orders         (NATS over TLS, as NATS clients write it)
 *
 * AMQP: the path is the virtual host (percent-encoded; none: "/"); `exchange` defaults to
 * the default exchange (""), `routingKey` to the message's event type. NATS: `subject`
 * defaults to the event type; `stream`, when given, is the stream that must store it.
 */
import { DestinationKind } from "./transport.ts";

/** A broker destination's URL that cannot be used; the message says why. */
export class BrokerUrlError extends Error {
  override name = "BrokerUrlError";
}

export interface AmqpTarget {
  kind: typeof DestinationKind.amqp;
  tls: boolean;
  hostname: string;
  port: number;
  username: string | null;
  password: string | null;
  vhost: string;
  exchange: string;
  /** null: the message's event type */
  routingKey: string | null;
}

export interface NatsTarget {
  kind: typeof DestinationKind.nats;
  /** tls://: the connection is upgraded to TLS and the server's certificate checked */
  tls: boolean;
  hostname: string;
  port: number;
  username: string | null;
  password: string | null;
  /** null: the message's event type */
  subject: string | null;
  stream: string | null;
}

export type BrokerTarget = AmqpTarget | NatsTarget;

const SCHEMES: Record<string, { kind: DestinationKind; port: number; tls: boolean }> = {
  "http:": { kind: DestinationKind.http, port: 80, tls: false },
  "https:": { kind: DestinationKind.http, port: 443, tls: true },
  "amqp:": { kind: DestinationKind.amqp, port: 5672, tls: false },
  "amqps:": { kind: DestinationKind.amqp, port: 5671, tls: true },
  "nats:": { kind: DestinationKind.nats, port: 4222, tls: false },
  "tls:": { kind: DestinationKind.nats, port: 4222, tls: true },
};

const OPTIONS: Record<"amqp" | "nats", readonly string[]> = {
  amqp: ["exchange", "routingKey"],
  nats: ["subject", "stream"],
};

// AMQP short strings (exchange names, routing keys) are at most 255 bytes.
const AMQP_NAME_MAX = 255;
// a NATS subject token: no whitespace, no wildcards when publishing
const NATS_SUBJECT = /^[^\s*>.]+(\.[^\s*>.]+)*$/;
const NATS_STREAM = /^[^\s.*>/\\]+$/;

/** The destination kind a URL's scheme names; null for a scheme no transport takes. */
export function destinationKindOf(url: string): DestinationKind | null {
  const colon = url.indexOf(":");
  if (colon < 0) return null;
  return SCHEMES[url.slice(0, colon + 1).toLowerCase()]?.kind ?? null;
}

/**
 * Reads a broker URL (as stored: without its password) and its password; throws
 * BrokerUrlError saying what is wrong.
 */
export function parseBrokerUrl(raw: string, password: string | null = null): BrokerTarget {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new BrokerUrlError("url is not a valid absolute URL");
  }
  const scheme = SCHEMES[url.protocol];
  if (scheme === undefined || scheme.kind === DestinationKind.http) {
    throw new BrokerUrlError(
      `a broker url uses amqp, amqps, nats or tls (NATS over TLS), not ${url.protocol}`,
    );
  }
  if (url.hostname === "") throw new BrokerUrlError("a broker url needs a host");
  if (url.hash !== "") throw new BrokerUrlError("a broker url has no #fragment");
  const kind = scheme.kind as "amqp" | "nats";
  const options = new Map<string, string>();
  for (const [name, value] of url.searchParams) {
    if (!OPTIONS[kind].includes(name)) {
      throw new BrokerUrlError(
        `${kind} urls take the options ${OPTIONS[kind].join(" and ")}, not ${JSON.stringify(name)}`,
      );
    }
    if (options.has(name)) throw new BrokerUrlError(`option ${name} is given twice`);
    options.set(name, value);
  }
  const username = url.username === "" ? null : decodeURIComponent(url.username);
  const common = {
    hostname: url.hostname,
    port: url.port === "" ? scheme.port : Number(url.port),
    username,
    password: password ?? (url.password === "" ? null : decodeURIComponent(url.password)),
  };
  if (kind === DestinationKind.amqp) {
    const path = url.pathname.replace(/^\//, "");
    const exchange = options.get("exchange") ?? "";
    const routingKey = options.get("routingKey") ?? null;
    if (Buffer.byteLength(exchange) > AMQP_NAME_MAX)
      throw new BrokerUrlError(`exchange is longer than ${AMQP_NAME_MAX} bytes`);
    if (routingKey !== null && Buffer.byteLength(routingKey) > AMQP_NAME_MAX)
      throw new BrokerUrlError(`routingKey is longer than ${AMQP_NAME_MAX} bytes`);
    return {
      kind,
      tls: scheme.tls,
      ...common,
      vhost: path === "" ? "/" : decodeURIComponent(path),
      exchange,
      routingKey,
    };
  }
  if (url.pathname !== "" && url.pathname !== "/") {
    throw new BrokerUrlError("a nats url has no path: name the subject with ?subject=");
  }
  const subject = options.get("subject") ?? null;
  const stream = options.get("stream") ?? null;
  if (subject !== null && !NATS_SUBJECT.test(subject)) {
    throw new BrokerUrlError(
      "subject must be dot-separated tokens without spaces or the wildcards * and >",
    );
  }
  if (stream !== null && !NATS_STREAM.test(stream)) {
    throw new BrokerUrlError("stream must be a name without spaces, dots, slashes, * or >");
  }
  return { kind, tls: scheme.tls, ...common, subject, stream };
}

/** The URL without its password (what endpoints.url stores) and the password apart. */
export function splitPassword(raw: string): { url: string; password: string | null } {
  const url = new URL(raw);
  if (url.password === "") return { url: raw, password: null };
  const password = decodeURIComponent(url.password);
  url.password = "";
  return { url: url.toString(), password };
}

/** The stored URL as answers show it: the password, when one is kept, as `***`. */
export function shownBrokerUrl(stored: string, hasPassword: boolean): string {
  if (!hasPassword) return stored;
  const url = new URL(stored);
  // (a password needs a user name before it in the URL; the user may be empty)
  url.password = "***";
  return url.toString().replace("%2A%2A%2A", "***");
}
