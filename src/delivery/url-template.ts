/**
 * URL templates of postback endpoints (README.md, Postbacks). A URL holding `{` is a
 * template (braces are not valid unencoded in a URL, so no URL is ambiguous):
 *
 *   {click_id}, {user.id}, {items.0.sku}   a payload field (a digit segment indexes an array)
 *   {$message_id} {$event_type} {$event_id} {$attempt} {$timestamp} {$token}
 *                                          built-ins: `$` never starts a field name here,
 *                                          so they cannot clash with payload keys
 *
 * Scheme, host and port are literal: a placeholder before the path is refused, so the
 * SSRF guard's check at save time holds for every request. Placeholders stand in the path
 * or the query (not the fragment, which is kept apart and never sent); each value is
 * percent-encoded for the place it stands in. The rendered request target is used as it
 * is, never re-parsed as a URL (a parser would resolve a value of `..` as a dot segment).
 */
import { type FieldValue, payloadFields } from "./payload-fields.ts";

export const BUILT_INS = [
  "message_id",
  "event_type",
  "event_id",
  "attempt",
  "timestamp",
  "token",
] as const;
export type BuiltIn = (typeof BUILT_INS)[number];

type Place = "path" | "query";

export type TemplatePart =
  | { kind: "text"; text: string }
  | { kind: "field"; path: string[]; source: string; place: Place }
  | { kind: "builtin"; name: BuiltIn; source: string; place: Place };

export interface UrlTemplate {
  /** scheme://host[:port], literal */
  origin: string;
  /** path and query, text and placeholders in order */
  parts: TemplatePart[];
  /** "#..." as written, or ""; never sent (a fragment belongs to the browser) */
  fragment: string;
  /** it places {$token} */
  usesToken: boolean;
}

/**
 * A template that does not parse; `position` counts characters (code points, so an emoji
 * is one) of the URL from 1.
 */
export class UrlTemplateError extends Error {
  readonly position: number;
  constructor(message: string, position: number) {
    super(`${message} (at position ${position} of the URL)`);
    this.name = "UrlTemplateError";
    this.position = position;
  }
}

export const isTemplate = (url: string): boolean => url.includes("{") || url.includes("}");

const FIELD = /^[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*$/;
// RFC 3986's unreserved and reserved characters, and "%"
const URL_CHAR = /^[A-Za-z0-9\-._~:/?#[\]@!$&'()*+,;=%]$/;

/** Parses a template; throws UrlTemplateError with the position of what is wrong. */
export function parseUrlTemplate(url: string): UrlTemplate {
  /** the error at the code unit `unit` (from 1), its position counted in characters */
  const fail = (message: string, unit: number) =>
    new UrlTemplateError(message, [...url.slice(0, Math.max(0, unit - 1))].length + 1);
  const scheme = /^[A-Za-z][A-Za-z0-9+.-]*:\/\//.exec(url);
  const firstBrace = url.search(/[{}]/);
  if (!scheme || (firstBrace !== -1 && firstBrace < scheme[0].length)) {
    throw fail(
      "the URL must start with a literal scheme and host (https://host/...)",
      firstBrace === -1 || scheme ? firstBrace + 1 : 1,
    );
  }
  const authorityEnd = indexOfAny(url, "/?#", scheme[0].length);
  const authority = url.slice(scheme[0].length, authorityEnd);
  const inAuthority = authority.search(/[{}]/);
  if (inAuthority !== -1) {
    throw fail(
      "scheme, host and port must be literal, never filled from a payload",
      scheme[0].length + inAuthority + 1,
    );
  }
  if (authority === "") throw fail("the URL has no host", scheme[0].length + 1);
  if (authority.includes("@")) {
    throw fail(
      "url must not contain credentials; send them in custom headers or as {$token}",
      scheme[0].length + 1,
    );
  }
  let origin: string;
  try {
    // the form a request needs: lower case, an international name in punycode, no default port
    origin = new URL(`${url.slice(0, authorityEnd)}/`).origin;
  } catch {
    throw fail("the host or port is not valid", scheme[0].length + 1);
  }

  // the fragment is never sent: kept apart, and no placeholder may stand in it
  const hash = url.indexOf("#", authorityEnd);
  const end = hash === -1 ? url.length : hash;
  const inFragment = hash === -1 ? -1 : url.slice(hash).search(/[{}]/);
  if (inFragment !== -1)
    throw fail("a placeholder in the fragment (never sent)", hash + inFragment + 1);
  const parts: TemplatePart[] = [];
  let place: Place = "path";
  let text = "";
  let usesToken = false;
  for (let i = authorityEnd; i < end; i++) {
    let c = url[i]!;
    // a character outside the BMP is two code units: kept together
    if (/[\uD800-\uDBFF]/.test(c) && /[\uDC00-\uDFFF]/.test(url[i + 1] ?? "")) c += url[++i];
    if (c === "}") throw fail("a } without its {", i + 1);
    if (c !== "{") {
      if (c === "?" && place === "path") place = "query";
      if (c === "%" && !/^[0-9A-Fa-f]{2}$/.test(url.slice(i + 1, i + 3)))
        throw fail("a % that starts no percent-encoded byte (write %25 for a % sign)", i + 1);
      // what a URL cannot hold as it is (a space, a non-ASCII letter) is encoded, as a URL
      // parser would; "%" stays (the text may be encoded already)
      text += URL_CHAR.test(c) ? c : encodeURIComponent(wellFormed(c));
      continue;
    }
    const close = url.indexOf("}", i + 1);
    const reopen = url.indexOf("{", i + 1);
    if (close === -1 || close > end || (reopen !== -1 && reopen < close))
      throw fail("a { without its }", i + 1);
    const source = url.slice(i, close + 1);
    const inner = source.slice(1, -1);
    if (text) parts.push({ kind: "text", text });
    text = "";
    if (inner.startsWith("$")) {
      const name = inner.slice(1);
      if (!(BUILT_INS as readonly string[]).includes(name)) {
        throw fail(
          `unknown built-in ${source}; the built-ins are ${BUILT_INS.map((b) => `{$${b}}`).join(", ")}`,
          i + 1,
        );
      }
      if (name === "token") usesToken = true;
      parts.push({ kind: "builtin", name: name as BuiltIn, source, place });
    } else {
      if (!FIELD.test(inner)) {
        throw fail(
          `${source} is not a payload field: letters, digits, _ and -, dots between nested names`,
          i + 1,
        );
      }
      parts.push({ kind: "field", path: inner.split("."), source, place });
    }
    i = close;
  }
  if (text) parts.push({ kind: "text", text });
  return { origin, parts, fragment: url.slice(end), usesToken };
}

/** The URL with every placeholder filled with a harmless value: what URL checks look at. */
export function sampleUrl(template: UrlTemplate): string {
  return (
    template.origin +
    template.parts.map((p) => (p.kind === "text" ? p.text : "x")).join("") +
    template.fragment
  );
}

export interface RenderInput {
  /** the payload's JSON text as stored */
  payload: string;
  messageId: string;
  eventType: string;
  eventId: string | null;
  /** 1-based number of this attempt */
  attempt: number;
  /** unix seconds, the same as webhook-timestamp */
  timestamp: number;
  /** the endpoint's URL token, opened */
  token: string | null;
}

export interface RenderOptions {
  /** a payload without a needed value: fail (the default) or render "" */
  missing: "fail" | "empty";
  /** true for a field name whose values are masked in what people see (security/redact.ts) */
  sensitive: (name: string) => boolean;
}

export type Rendered =
  | {
      ok: true;
      /** path and query, to send as they are */
      path: string;
      /** the full URL with the token and sensitive values masked, for attempt rows */
      shown: string;
      /** values placed that must be masked wherever they are echoed (token, sensitive fields) */
      secrets: string[];
    }
  /** `placeholder`: the first one without a value; `why` says what it found */
  | { ok: false; placeholder: string; why: string };

const MASK = "***";

/** Fills a template for one attempt. */
export function renderUrlTemplate(
  template: UrlTemplate,
  input: RenderInput,
  options: RenderOptions,
): Rendered {
  let fields: ReturnType<typeof payloadFields> | null = null;
  let path = "";
  let shown = "";
  const secrets: string[] = [];
  for (const part of template.parts) {
    if (part.kind === "text") {
      path += part.text;
      shown += part.text;
      continue;
    }
    let value: FieldValue;
    let masked: boolean;
    if (part.kind === "field") {
      fields ??= payloadFields(input.payload);
      value = fields.get(part.path);
      // (a sensitive name anywhere on the path: {card.number} is a card field)
      masked = part.path.some(options.sensitive);
    } else {
      value = builtIn(part.name, input);
      masked = part.name === "token";
    }
    if (value.kind === "composite") {
      return { ok: false, placeholder: part.source, why: "is an object or array, not a value" };
    }
    if (value.kind === "missing" && options.missing === "fail") {
      return { ok: false, placeholder: part.source, why: "has no value in this message" };
    }
    const text = value.kind === "text" ? value.text : "";
    const encoded = encodeFor(part.place, text);
    path += encoded;
    shown += masked && text !== "" ? MASK : encoded;
    if (masked && text !== "") secrets.push(text, encoded);
  }
  return { ok: true, path, shown: template.origin + shown, secrets };
}

function builtIn(name: BuiltIn, input: RenderInput): FieldValue {
  const text = (t: string | null): FieldValue =>
    t === null || t === "" ? { kind: "missing" } : { kind: "text", text: t };
  switch (name) {
    case "message_id":
      return text(input.messageId);
    case "event_type":
      return text(input.eventType);
    case "event_id":
      return text(input.eventId);
    case "attempt":
      return text(String(input.attempt));
    case "timestamp":
      return text(String(input.timestamp));
    case "token":
      return text(input.token);
  }
}

/**
 * Percent-encoding for a path segment or a query name or value: everything but RFC 3986's
 * unreserved characters is encoded (so `/`, `?`, `&`, `=`, `+` and `#` inside a value never
 * act as delimiters), and in a path a value of only dots has them encoded too, so a
 * receiver's normalization cannot take it for `.` or `..`.
 */
export function encodeFor(place: Place, value: string): string {
  const encoded = encodeURIComponent(wellFormed(value)).replace(
    /[!'()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );
  if (place === "path" && /^\.+$/.test(value)) return encoded.replace(/\./g, "%2E");
  return encoded;
}

/** A lone UTF-16 surrogate (valid in JSON text, not in a URL) becomes U+FFFD. */
export function wellFormed(value: string): string {
  return value.replace(
    /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g,
    "\uFFFD",
  );
}

function indexOfAny(s: string, chars: string, from: number): number {
  for (let i = from; i < s.length; i++) if (chars.includes(s[i]!)) return i;
  return s.length;
}
