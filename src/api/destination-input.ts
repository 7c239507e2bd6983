/**
 * Broker destinations as requests and answers carry them (docs/destinations.md): an
 * endpoint whose `url` is amqp://, amqps://, nats:// or tls:// delivers to RabbitMQ or NATS
 * JetStream. The URL's password is taken out of it and sealed at rest
 * (endpoints.destination_secret); answers show it as `***`, and a `***` sent back keeps the
 * stored one, so a read-modify-write never stores the mask.
 */
import type { EndpointFields, EndpointRow } from "../db/queries/endpoints.ts";
import {
  BrokerUrlError,
  destinationKindOf,
  parseBrokerUrl,
  shownBrokerUrl,
  splitPassword,
} from "../delivery/broker-target.ts";
import { MASK } from "../security/redact.ts";
import type { SecretBox } from "../security/secret-box.ts";
import { validationError } from "./errors.ts";

/** True when `url` names a broker (amqp, amqps, nats, tls), not an HTTP receiver. */
export function isBrokerUrl(url: string): boolean {
  const kind = destinationKindOf(url);
  return kind !== null && kind !== "http";
}

/** Checks a broker url as given (its password included); returns it, or throws a 422. */
export function checkBrokerUrl(raw: string): string {
  try {
    parseBrokerUrl(raw);
  } catch (err) {
    if (err instanceof BrokerUrlError) throw validationError(`url: ${err.message}`, { cause: err });
    throw err;
  }
  return raw;
}

/**
 * The destination columns for a new `url` (already checked): its kind and, for a broker,
 * the url without its password and the password sealed. A password of `***` keeps the
 * endpoint's stored one (`current`), which must exist.
 */
export function destinationColumns(
  url: string,
  current: EndpointRow | null,
  secretBox: SecretBox,
): Pick<EndpointFields, "url" | "destination_kind"> & Partial<EndpointFields> {
  const kind = destinationKindOf(url);
  if (kind === null || kind === "http") {
    return { url, destination_kind: "http", destination_secret: null };
  }
  const { url: stored, password } = splitPassword(url);
  if (password === MASK) {
    if (!current?.has_destination_secret) {
      throw validationError(
        `the url's password "${MASK}" is how answers mask it, and this endpoint keeps none: send the password itself`,
      );
    }
    // the stored password stays
    return { url: stored, destination_kind: kind };
  }
  return {
    url: stored,
    destination_kind: kind,
    destination_secret: password === null ? null : secretBox.seal(password),
  };
}

/** A broker endpoint takes none of the postback fields that shape an HTTP request. */
export function checkBrokerState(state: {
  kind: string;
  method: string;
  bodyFormat: string;
  hasToken: boolean;
}): void {
  if (state.kind === "http") return;
  if (state.method !== "POST" || state.bodyFormat !== "json" || state.hasToken) {
    throw validationError(
      `a ${state.kind} destination publishes the JSON payload: method, bodyFormat "form" and urlToken apply to HTTP endpoints only`,
    );
  }
}

/** The url and destination kind of an answer, the broker password masked. */
export const destinationOut = (r: EndpointRow) => ({
  url: r.destination_kind === "http" ? r.url : shownBrokerUrl(r.url, r.has_destination_secret),
  destinationKind: r.destination_kind,
});

/**
 * One line on where a broker endpoint publishes, for people (the dashboard's and the
 * portal's endpoint pages); null for an HTTP endpoint or a URL that does not read.
 */
export function brokerDestinationText(url: string): string | null {
  if (!isBrokerUrl(url)) return null;
  let target: ReturnType<typeof parseBrokerUrl>;
  try {
    target = parseBrokerUrl(url.replace(":***@", "@"));
  } catch {
    return null;
  }
  if (target.kind === "amqp") {
    const exchange =
      target.exchange === "" ? "the default exchange" : `exchange "${target.exchange}"`;
    const key = target.routingKey === null ? "the event type" : `"${target.routingKey}"`;
    return `RabbitMQ: published to ${exchange} of virtual host "${target.vhost}", routing key ${key}, counted when the broker confirms it`;
  }
  const subject = target.subject === null ? "the event type" : `"${target.subject}"`;
  const stream = target.stream === null ? "" : ` (stream "${target.stream}")`;
  return `NATS JetStream: published to subject ${subject}${stream}, counted when the stream acks it`;
}
