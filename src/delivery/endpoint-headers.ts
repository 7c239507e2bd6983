/**
 * Which custom headers an endpoint may have (README.md, Endpoints; docs/delivery.md, Custom
 * headers). The API refuses the others when an endpoint is saved (api/endpoint-input.ts);
 * the sender drops them from rows saved before this rule (delivery/http/prepare-request.ts),
 * so such an endpoint's deliveries still go out.
 *
 * Refused: what the sender itself controls or that would break the request. A custom
 * `User-Agent` is allowed and replaces hookrelay's own.
 */

/** Header names (lowercase) hookrelay sets or manages, with why an endpoint may not set them. */
const CONTROLLED: ReadonlyMap<string, string> = new Map([
  [
    "expect",
    "asks for a 100-continue handshake the sender does not make: no delivery could be sent",
  ],
  ["host", "comes from the endpoint URL"],
  ["content-length", "is computed from the body the sender sends"],
  ["content-type", "is set by hookrelay from the endpoint's bodyFormat"],
  ["transfer-encoding", "is chosen by the sender (the body is sent whole, with its length)"],
  ["connection", "is a hop-by-hop header: the sender manages its connections"],
  ["keep-alive", "is a hop-by-hop header: the sender manages its connections"],
  ["te", "is a hop-by-hop header: the sender manages its connections"],
  ["trailer", "is a hop-by-hop header: the sender sends no trailers"],
  ["upgrade", "is a hop-by-hop header: a delivery is one plain HTTP request"],
]);

/** RFC 9110 token characters: what a field name is made of. */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** RFC 9110 field value characters: visible ASCII, space, tab and obs-text; no CR, LF or NUL. */
const FIELD_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;

/** Why an endpoint may not have the header `name: value`, or null when it may. */
export function headerRefusal(name: string, value: unknown): string | null {
  if (!TOKEN.test(name))
    return "is not a valid header name (RFC 9110 token characters only: letters, digits and !#$%&'*+-.^_`|~)";
  if (typeof value !== "string") return "must have a string value";
  if (!FIELD_VALUE.test(value))
    return "has a value with a character HTTP does not allow (CR, LF, NUL and other control characters, or a character above U+00FF)";
  const lower = name.toLowerCase();
  const why = CONTROLLED.get(lower);
  if (why) return why;
  if (lower.startsWith("webhook-"))
    return "is in the webhook-* namespace, which belongs to the Standard Webhooks signature headers hookrelay sets";
  if (lower.startsWith("proxy-"))
    return "is a Proxy-* header, meant for a proxy: hookrelay sends to the receiver directly";
  return null;
}

/**
 * The headers of `headers` an endpoint may send, one per name case-insensitively (the last
 * wins), and the names dropped because headerRefusal refuses them.
 */
export function sendableHeaders(headers: Record<string, string>): {
  headers: Record<string, string>;
  dropped: string[];
} {
  const byLower = new Map<string, [string, string]>();
  const dropped: string[] = [];
  for (const [name, value] of Object.entries(headers)) {
    if (headerRefusal(name, value) !== null) dropped.push(name);
    else byLower.set(name.toLowerCase(), [name, value]);
  }
  return { headers: Object.fromEntries(byLower.values()), dropped };
}
