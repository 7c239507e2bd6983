/**
 * An endpoint as requests describe it (POST, PUT, PATCH): the body's JSON schema, and the
 * checks JSON schema cannot make, turning a body into the columns it writes
 * (db/queries/endpoints.ts).
 */
import type { EndpointFields } from "../db/queries/endpoints.ts";
import { headerRefusal } from "../delivery/endpoint-headers.ts";
import { InvalidSecretError, secretKey } from "../delivery/sign.ts";
import type { PolicyIn } from "../domain/endpoint-policy.ts";
import {
  policyColumnsOf,
  policyConflict,
  policyPutDefaults,
  policySchemaProperties,
} from "../domain/endpoint-policy-derived.ts";
import { checkBrokerUrl, isBrokerUrl } from "./destination-input.ts";
import { type EgressIn, egressProperties } from "./egress-input.ts";
import { badRequest, validationError } from "./errors.ts";
import { type OAuth2In, oauth2Properties } from "./oauth2-input.ts";
import {
  type PostbackIn,
  postbackColumns,
  postbackProperties,
  urlToCheck,
} from "./postback-input.ts";
import { metadataSchema, nameListSchema, uidSchema } from "./schemas.ts";

export type EndpointIn = PostbackIn &
  EgressIn &
  PolicyIn & { oauth2?: OAuth2In | null } & Partial<{
    url: string;
    description: string;
    eventTypes: string[] | null;
    filterTypes: string[] | null;
    channels: string[] | null;
    disabled: boolean;
    metadata: Record<string, string>;
    headers: Record<string, string> | null;
    uid: string | null;
    secret: string | null;
    version: number;
  }>;

const endpointProperties = {
  url: {
    type: "string",
    minLength: 1,
    maxLength: 2048,
    description:
      "Where deliveries go: an http(s) URL (or a postback URL template), or a broker: amqp://user:pass@host:5672/vhost?exchange=X&routingKey=Y (RabbitMQ, publisher confirms) or nats://user:pass@host:4222?subject=X&stream=Y (NATS JetStream; tls:// for NATS over TLS). A broker URL's password is sealed at rest and answered as ***; sending *** back keeps it (docs/destinations.md).",
  },
  description: { type: "string", maxLength: 2048 },
  eventTypes: nameListSchema,
  filterTypes: nameListSchema,
  channels: nameListSchema,
  disabled: { type: "boolean" },
  metadata: metadataSchema,
  headers: {
    type: ["object", "null"],
    description:
      "Custom headers sent with every delivery. Names are RFC 9110 tokens, values have no CR, LF or NUL; headers the sender controls (Expect, Host, Content-Type, Content-Length, Connection and the other hop-by-hop headers, webhook-*, Proxy-*) are refused. A User-Agent replaces hookrelay's.",
    // names and values are checked by checkHeaders (delivery/endpoint-headers.ts), whose
    // refusals name the header and say why
    additionalProperties: { type: "string", maxLength: 4096 },
    propertyNames: { maxLength: 256 },
    maxProperties: 32,
  },
  uid: uidSchema,
  secret: { type: ["string", "null"], maxLength: 128 },
  version: { type: "integer", minimum: 1 },
  // the delivery policy (domain/endpoint-policy.ts)
  ...policySchemaProperties(),
  // postback endpoints: method, bodyFormat, urlToken, missingFields, successRule
  ...postbackProperties,
  // egress: egressPool, proxyUrl, tlsClientCert, tlsClientKey, tlsCa (docs/egress.md)
  ...egressProperties,
  // OAuth2 client credentials (docs/oauth2.md)
  ...oauth2Properties,
} as const;
export const endpointIn = {
  type: "object",
  additionalProperties: false,
  properties: endpointProperties,
  required: ["url"],
} as const;
export const endpointPatch = {
  type: "object",
  additionalProperties: false,
  properties: endpointProperties,
} as const;
/** Checks what JSON schema cannot; returns the body's fields as column values. */
export function toColumns(body: EndpointIn): Partial<EndpointFields> {
  const cols: Partial<EndpointFields> = {};
  if (body.url !== undefined) cols.url = checkUrl(body.url);
  if (body.description !== undefined) cols.description = body.description;
  const types = body.eventTypes !== undefined ? body.eventTypes : body.filterTypes;
  if (types !== undefined) cols.event_types = types && types.length > 0 ? types : null;
  if (body.channels !== undefined)
    cols.channels = body.channels && body.channels.length > 0 ? body.channels : null;
  if (body.disabled !== undefined) {
    cols.disabled = body.disabled;
    cols.disabled_reason = body.disabled ? "operator" : null;
  }
  if (body.metadata !== undefined) cols.metadata = body.metadata;
  if (body.headers !== undefined) cols.headers = checkHeaders(body.headers ?? {});
  if (body.uid !== undefined) cols.uid = body.uid;
  // the delivery policy (domain/endpoint-policy.ts)
  Object.assign(cols, policyColumnsOf(body));
  // postback endpoints
  Object.assign(cols, postbackColumns(body));
  const conflict = policyConflict(cols);
  if (conflict) throw badRequest(conflict);
  return cols;
}

/** Defaults a PUT gives to the fields it leaves out. */
export const REPLACE_DEFAULTS: Partial<EndpointFields> = {
  description: "",
  event_types: null,
  channels: null,
  disabled: false,
  disabled_reason: null,
  metadata: {},
  // the delivery policy: each field as its `put` says (domain/endpoint-policy.ts)
  ...policyPutDefaults(),
  // (the postback fields are not reset: a PUT that leaves them out keeps them, like the URL
  // token, because the svix client's endpoint.upsert is a PUT that cannot send them, and a
  // GET postback silently turned into a POST would lose every conversion)
};

export function checkUrl(raw: string): string {
  // a broker destination (docs/destinations.md): its credentials are allowed, and sealed
  if (isBrokerUrl(raw)) return checkBrokerUrl(raw);
  let url: URL;
  // (a URL template: checked with its placeholders filled; its host is literal)
  const checked = urlToCheck(raw);
  try {
    url = new URL(checked);
  } catch {
    throw validationError(`url is not a valid absolute URL`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw validationError(
      `url must use http or https (or a broker's amqp, amqps, nats or tls), not ${url.protocol.replace(":", "")}`,
    );
  }
  if (url.username || url.password) {
    throw validationError("url must not contain credentials; send them in custom headers instead");
  }
  return raw;
}

/** The endpoint's custom headers, or a 422 naming the first that may not be sent and why. */
export function checkHeaders(headers: Record<string, string>): Record<string, string> {
  const seen = new Map<string, string>();
  for (const [name, value] of Object.entries(headers)) {
    const why = headerRefusal(name, value);
    if (why) throw validationError(`header ${JSON.stringify(name)} ${why}`);
    const prior = seen.get(name.toLowerCase());
    if (prior !== undefined)
      throw validationError(
        `headers ${JSON.stringify(prior)} and ${JSON.stringify(name)} are the same header (names are case-insensitive): give it once`,
      );
    seen.set(name.toLowerCase(), name);
  }
  return headers;
}

export function checkSecret(secret: string): string {
  try {
    secretKey(secret);
  } catch (err) {
    if (err instanceof InvalidSecretError) throw validationError(err.message, { cause: err });
    throw err;
  }
  return secret.startsWith("whsec_") ? secret : `whsec_${secret}`;
}
