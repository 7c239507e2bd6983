/**
 * Masking of sensitive values wherever hookrelay shows data to people or writes logs:
 * log lines, stored error texts and response bodies, URLs in listings, dead-letter
 * analysis. A field is sensitive by name (case-insensitive, `-`/`_` ignored): its value is
 * replaced by "***" in query strings (`click_id=...`), form bodies and JSON text
 * (`"email": "..."`). Email addresses are masked wherever they appear.
 */

export const DEFAULT_SENSITIVE_FIELDS = [
  // click and tracking ids
  "click_id",
  "clickid",
  "cid",
  "gclid",
  "fbclid",
  "msclkid",
  "ttclid",
  "sub_id",
  "subid",
  "aff_sub",
  // conversion and transaction ids
  "conversion_id",
  "transaction_id",
  "txid",
  "tid",
  "order_id",
  "payout_id",
  // payment and card fields
  "card",
  "card_number",
  "cardnumber",
  "pan",
  "cc",
  "ccnum",
  "cvv",
  "cvc",
  "expiry",
  "iban",
  "account_number",
  "routing_number",
  "payment_method",
  // people
  "email",
  "e_mail",
  "phone",
  "password",
  "token",
  "secret",
  "api_key",
  "authorization",
] as const;

export const MASK = "***";

export interface Redactor {
  /** masks sensitive values inside free text (JSON, query strings, form bodies, messages) */
  text(value: string): string;
  /**
   * a URL with the values of sensitive query parameters masked; a URL template (it holds
   * `{`: README.md, Postbacks) as written, its placeholders kept and its literal sensitive
   * values masked, never percent-encoded
   */
  url(value: string): string;
  /** deep copy of a log object with every string passed through text() */
  object<T>(value: T): T;
  /** the values of sensitive fields anywhere in a JSON document (4+ characters), to mask wherever they are echoed */
  valuesIn(json: string): string[];
  /** text() plus every occurrence of the given values */
  textWithout(value: string, values: readonly string[]): string;
  /** true for a field name whose values are masked (URL templates mask what they place) */
  isSensitive(name: string): boolean;
}

const normalize = (name: string) => name.toLowerCase().replace(/[-_]/g, "");
// bounded repetitions: linear time on long hostile texts
// ("%40" too: an address inside a URL's query string)
const EMAIL = /[A-Za-z0-9._%+-]{1,64}(?:@|%40)[A-Za-z0-9.-]{1,253}\.[A-Za-z]{2,24}/gi;
/** a value that is one or more placeholders of a URL template and nothing else */
const PLACEHOLDERS_ONLY = /^(?:\{[^{}]{1,200}\})+$/;
/** scheme://user:password@ (templates refuse credentials; a stored one is masked all the same) */
const USERINFO_PASSWORD = /^([A-Za-z][A-Za-z0-9+.-]{0,30}:\/\/[^/?#@:]{0,200}:)[^/?#@]{0,500}@/;

export function makeRedactor(fields: readonly string[] = DEFAULT_SENSITIVE_FIELDS): Redactor {
  const names = new Set(fields.map(normalize));
  const sensitive = (name: string) => names.has(normalize(name));
  // "name": "value" | "name": 123 (JSON text)
  const jsonPair = /"([^"\\]{1,64})"(\s*:\s*)("(?:[^"\\]|\\.)*"|-?[0-9][0-9.eE+-]*)/g;
  // name=value in query strings and form bodies
  // (a value ends at & ; / # whitespace or a quote: ";"-separated and path parameters too)
  const queryPair = /([A-Za-z0-9_.-]{1,64})=([^&;/\s#"']*)/g;

  const jsonKey = /"([^"\\]{1,64})"\s*:/g;
  const hasSensitiveKey = (json: string): boolean => {
    jsonKey.lastIndex = 0;
    for (let m = jsonKey.exec(json); m; m = jsonKey.exec(json)) if (sensitive(m[1]!)) return true;
    return false;
  };

  // "name": [ ... ] or "name": { ... } — the whole balanced value goes
  const jsonOpen = /"([^"\\]{1,64})"\s*:\s*([[{])/g;
  const maskNested = (value: string): string => {
    let out = "";
    let from = 0;
    jsonOpen.lastIndex = 0;
    for (let m = jsonOpen.exec(value); m; m = jsonOpen.exec(value)) {
      if (!sensitive(m[1]!)) continue;
      const start = m.index + m[0].length - 1;
      const end = balancedEnd(value, start);
      out += `${value.slice(from, start)}"${MASK}"`;
      from = end;
      jsonOpen.lastIndex = end;
    }
    return out + value.slice(from);
  };

  const text = (value: string): string =>
    maskNested(value)
      .replace(jsonPair, (m, name: string, colon: string) =>
        sensitive(name) ? `"${name}"${colon}"${MASK}"` : m,
      )
      // an unterminated value at the very end (text cut short): "name":"abc<end>
      .replace(/"([^"\\]{1,64})"(\s*:\s*)"[^"]*$/, (m, name: string, colon: string) =>
        sensitive(name) ? `"${name}"${colon}"${MASK}` : m,
      )
      .replace(queryPair, (m, name: string) => (sensitive(name) ? `${name}=${MASK}` : m))
      .replace(EMAIL, MASK);

  // Log objects may be cyclic or absurdly deep: a log call must never throw.
  const object = <T>(value: T, seen: WeakSet<object> = new WeakSet(), depth = 0): T => {
    if (typeof value === "string") return text(value) as T;
    if (value && typeof value === "object") {
      if (seen.has(value)) return "[Circular]" as T;
      if (depth >= 10) return "[Object]" as T;
      seen.add(value);
    }
    if (value instanceof Error) {
      // pino's err shape, masked (an Error's own fields are not enumerable)
      const e = value as Error & { code?: unknown };
      return {
        type: e.name,
        message: text(e.message),
        stack: text(e.stack ?? ""),
        ...(e.code !== undefined && { code: e.code }),
        ...(object({ ...e }, seen, depth + 1) as object),
      } as T;
    }
    if (Array.isArray(value)) return value.map((v) => object(v, seen, depth + 1)) as T;
    if (value && typeof value === "object" && !(value instanceof Date)) {
      const out: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(value))
        out[k] = sensitive(k) ? MASK : object(v, seen, depth + 1);
      return out as T;
    }
    return value;
  };

  // A template is never parsed as a URL (a parser would percent-encode `{click_id}`): the
  // value of a sensitive name is masked unless it is placeholders only ({click_id}, {$token}:
  // names, not values), and so are a password and email addresses.
  const templateUrl = (value: string): string =>
    value
      .replace(queryPair, (m, name: string, v: string) =>
        sensitive(name) && !PLACEHOLDERS_ONLY.test(v) ? `${name}=${MASK}` : m,
      )
      .replace(USERINFO_PASSWORD, `$1${MASK}@`)
      .replace(EMAIL, MASK);

  return {
    text,
    url(value) {
      if (value.includes("{") || value.includes("}")) return templateUrl(value);
      try {
        const u = new URL(value);
        let changed = false;
        for (const name of [...u.searchParams.keys()]) {
          if (sensitive(name)) {
            u.searchParams.set(name, MASK);
            changed = true;
          }
        }
        if (u.password) {
          u.password = MASK;
          changed = true;
        }
        // and whatever URLSearchParams does not see: ;-separated, &amp;-escaped, path parameters
        return text(changed ? u.toString().replace(/%2A%2A%2A/g, MASK) : value);
      } catch {
        return text(value);
      }
    },
    object,
    valuesIn(json) {
      // Most payloads have no sensitive field at all: a scan of their keys says so without
      // parsing. Escaped text may hide a key's name from the scan; it is parsed.
      if (!json.includes("\\") && !hasSensitiveKey(json)) return [];
      const found = new Set<string>();
      let doc: unknown;
      try {
        doc = JSON.parse(json);
      } catch {
        return [];
      }
      const walk: Array<{ v: unknown; hot: boolean }> = [{ v: doc, hot: false }];
      while (walk.length > 0) {
        const { v, hot } = walk.pop()!;
        if ((typeof v === "string" || typeof v === "number") && hot) {
          const s = String(v);
          if (s.length >= 4) found.add(s);
        } else if (Array.isArray(v)) {
          for (const x of v) walk.push({ v: x, hot });
        } else if (v && typeof v === "object") {
          for (const [k, x] of Object.entries(v)) walk.push({ v: x, hot: hot || sensitive(k) });
        }
      }
      return [...found];
    },
    textWithout(value, values) {
      let out = value;
      for (const v of values) out = out.split(v).join(MASK);
      return text(out);
    },
    isSensitive: sensitive,
  };
}

/** Index just past the bracket that closes the one at `start` (strings skipped). */
function balancedEnd(s: string, start: number): number {
  let depth = 0;
  for (let i = start; i < s.length; i++) {
    const c = s[i];
    if (c === '"') {
      for (i++; i < s.length && s[i] !== '"'; i++) if (s[i] === "\\") i++;
    } else if (c === "[" || c === "{") depth++;
    else if (c === "]" || c === "}") {
      depth--;
      if (depth === 0) return i + 1;
    }
  }
  return s.length;
}
