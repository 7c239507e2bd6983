/**
 * The three Standard Webhooks headers, read from whatever a framework hands over: a plain
 * object in any letter case (Node's IncomingHttpHeaders, with string[] values for repeated
 * headers) or a Fetch `Headers`.
 */

/** Headers as Node, Express, Fastify or the Fetch API present them. */
export type HeadersLike =
  | { get(name: string): string | null | undefined }
  | Readonly<Record<string, string | readonly string[] | number | undefined>>;

export interface WebhookHeaders {
  id: string | undefined;
  timestamp: string | undefined;
  signature: string | undefined;
  /** content-type, to read the body by (JSON, form, or none on a GET) */
  contentType: string | undefined;
}

const NAMES = {
  standard: { id: "webhook-id", timestamp: "webhook-timestamp", signature: "webhook-signature" },
  // Svix sends the same scheme under its own prefix; accepted when no webhook-id is present
  svix: { id: "svix-id", timestamp: "svix-timestamp", signature: "svix-signature" },
} as const;

/** Reads webhook-id, webhook-timestamp and webhook-signature (or their svix- twins). */
export function readWebhookHeaders(headers: HeadersLike): WebhookHeaders {
  const get = headerGetter(headers);
  const names =
    get(NAMES.standard.id) === undefined && get(NAMES.svix.id) !== undefined
      ? NAMES.svix
      : NAMES.standard;
  return {
    id: get(names.id),
    timestamp: get(names.timestamp),
    // Repeated signature headers are one list: Node and Fetch join repeats with ", ",
    // which the signature parser accepts.
    signature: get(names.signature),
    contentType: get("content-type"),
  };
}

function headerGetter(headers: HeadersLike): (name: string) => string | undefined {
  if (typeof headers.get === "function") {
    const fetchLike = headers as { get(name: string): string | null | undefined };
    return (name) => fetchLike.get(name) ?? undefined;
  }
  const lowered = new Map<string, string>();
  for (const [key, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    const text = Array.isArray(value) ? value.join(", ") : String(value);
    const name = key.toLowerCase();
    const before = lowered.get(name);
    // the same header under two spellings ("Webhook-Id" and "webhook-id") counts as repeated
    lowered.set(name, before === undefined ? text : `${before}, ${text}`);
  }
  return (name) => lowered.get(name);
}
