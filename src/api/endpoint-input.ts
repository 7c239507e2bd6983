/**
 * An endpoint as requests describe it (POST, PUT, PATCH): the body's JSON schema, and the
 * checks JSON schema cannot make, turning a body into the columns it writes
 * (db/queries/endpoints.ts).
 */
import type { EndpointFields } from "../db/queries/endpoints.ts";
import { headerRefusal } from "../delivery/endpoint-headers.ts";
import { InvalidSecretError, secretKey } from "../delivery/sign.ts";
import { badRequest, validationError } from "./errors.ts";
import {
  type PostbackIn,
  postbackColumns,
  postbackProperties,
  urlToCheck,
} from "./postback-input.ts";
import { metadataSchema, nameListSchema, uidSchema } from "./schemas.ts";

export type EndpointIn = PostbackIn &
  Partial<{
    url: string;
    description: string;
    eventTypes: string[] | null;
    filterTypes: string[] | null;
    channels: string[] | null;
    disabled: boolean;
    metadata: Record<string, string>;
    headers: Record<string, string> | null;
    uid: string | null;
    throttleRate: number | null;
    rateLimit: number | null;
    secret: string | null;
    version: number;
    timeoutMs: number | null;
    maxAttempts: number | null;
    retryBaseMs: number | null;
    retryCapMs: number | null;
    maxInFlight: number | null;
    failureThreshold: number | null;
    cooldownMs: number | null;
    ratePerSecond: number | null;
    ratePerMinute: number | null;
    ratePerHour: number | null;
  }>;

const nullableInt = (minimum: number, maximum: number) =>
  ({ type: ["integer", "null"], minimum, maximum }) as const;

const endpointProperties = {
  url: { type: "string", minLength: 1, maxLength: 2048 },
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
  throttleRate: nullableInt(1, 1_000_000),
  rateLimit: nullableInt(1, 1_000_000),
  secret: { type: ["string", "null"], maxLength: 128 },
  version: { type: "integer", minimum: 1 },
  timeoutMs: nullableInt(100, 300_000),
  maxAttempts: nullableInt(1, 100),
  retryBaseMs: nullableInt(0, 86_400_000),
  retryCapMs: nullableInt(0, 604_800_000),
  maxInFlight: nullableInt(1, 10_000),
  failureThreshold: nullableInt(1, 10_000),
  cooldownMs: nullableInt(1_000, 86_400_000),
  ratePerSecond: nullableInt(1, 1_000_000),
  ratePerMinute: nullableInt(1, 60_000_000),
  ratePerHour: nullableInt(1, 1_000_000_000),
  // postback endpoints: method, bodyFormat, urlToken, missingFields, successRule
  ...postbackProperties,
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
  const rate = body.throttleRate !== undefined ? body.throttleRate : body.rateLimit;
  if (rate !== undefined) cols.throttle_rate = rate;
  if (body.timeoutMs !== undefined) cols.timeout_ms = body.timeoutMs;
  if (body.maxAttempts !== undefined) cols.max_attempts = body.maxAttempts;
  if (body.retryBaseMs !== undefined) cols.retry_base_ms = body.retryBaseMs;
  if (body.retryCapMs !== undefined) cols.retry_cap_ms = body.retryCapMs;
  if (body.maxInFlight !== undefined) cols.max_in_flight = body.maxInFlight;
  if (body.failureThreshold !== undefined) cols.failure_threshold = body.failureThreshold;
  if (body.cooldownMs !== undefined) cols.cooldown_ms = body.cooldownMs;
  if (body.ratePerSecond !== undefined) cols.rate_per_second = body.ratePerSecond;
  if (body.ratePerMinute !== undefined) cols.rate_per_minute = body.ratePerMinute;
  if (body.ratePerHour !== undefined) cols.rate_per_hour = body.ratePerHour;
  // postback endpoints
  Object.assign(cols, postbackColumns(body));
  if (
    typeof cols.retry_base_ms === "number" &&
    typeof cols.retry_cap_ms === "number" &&
    cols.retry_cap_ms < cols.retry_base_ms
  ) {
    throw badRequest("retryCapMs must be >= retryBaseMs");
  }
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
  throttle_rate: null,
  timeout_ms: null,
  max_attempts: null,
  retry_base_ms: null,
  retry_cap_ms: null,
  max_in_flight: null,
  failure_threshold: null,
  cooldown_ms: null,
  rate_per_second: null,
  rate_per_minute: null,
  rate_per_hour: null,
  // (the postback fields are not reset: a PUT that leaves them out keeps them, like the URL
  // token, because the svix client's endpoint.upsert is a PUT that cannot send them, and a
  // GET postback silently turned into a POST would lose every conversion)
};

export function checkUrl(raw: string): string {
  let url: URL;
  // (a URL template: checked with its placeholders filled; its host is literal)
  const checked = urlToCheck(raw);
  try {
    url = new URL(checked);
  } catch {
    throw validationError(`url is not a valid absolute URL`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw validationError(`url must use http or https, not ${url.protocol.replace(":", "")}`);
  }
  if (url.username || url.password) {
    throw validationError("url must not contain credentials; send them in custom headers instead");
  }
  return raw;
}

/** The endpoint's custom headers, or a 422 naming the first that may not be sent and why. */
function checkHeaders(headers: Record<string, string>): Record<string, string> {
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
