/**
 * Masking of sensitive values wherever hookrelay shows data to people or writes logs:
 * log lines, stored error texts and response bodies, URLs in listings, dead-letter
 * analysis. A field is sensitive by name (case-insensitive, `-`/`_` ignored): its value is
 * replaced by "***" in query strings (`click_id=...`), form bodies and JSON text
 * (`"email": "..."`). Email addresses are masked wherever they appear.
 */

export const DEFAULT_SENSITIVE_FIELDS = [
  // click and tracking ids
  "click_id", "clickid", "cid", "gclid", "fbclid", "msclkid", "ttclid", "sub_id", "subid", "aff_sub",
  // conversion and transaction ids
  "conversion_id", "transaction_id", "txid", "tid", "order_id", "payout_id",
  // payment and card fields
  "card", "card_number", "cardnumber", "pan", "cc", "ccnum", "cvv", "cvc", "expiry", "iban",
  "account_number", "routing_number", "payment_method",
  // people
  "email", "e_mail", "phone", "password", "token", "secret", "api_key", "authorization",
] as const;

export const MASK = "***";

export interface Redactor {
  /** masks sensitive values inside free text (JSON, query strings, form bodies, messages) */
  text(value: string): string;
  /** a URL with the values of sensitive query parameters masked */
  url(value: string): string;
  /** deep copy of a log object with every string passed through text() */
  object<T>(value: T): T;
}

const normalize = (name: string) => name.toLowerCase().replace(/[-_]/g, "");
const EMAIL = /[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}/g;

export function makeRedactor(fields: readonly string[] = DEFAULT_SENSITIVE_FIELDS): Redactor {
  const names = new Set(fields.map(normalize));
  const sensitive = (name: string) => names.has(normalize(name));
  // "name": "value" | "name": 123 (JSON text)
  const jsonPair = /"([^"\\]{1,64})"(\s*:\s*)("(?:[^"\\]|\\.)*"|-?[0-9][0-9.eE+-]*)/g;
  // name=value in query strings and form bodies
  const queryPair = /([A-Za-z0-9_.-]{1,64})=([^&\s#"']*)/g;

  const text = (value: string): string =>
    value
      .replace(jsonPair, (m, name: string, colon: string) => (sensitive(name) ? `"${name}"${colon}"${MASK}"` : m))
      .replace(queryPair, (m, name: string) => (sensitive(name) ? `${name}=${MASK}` : m))
      .replace(EMAIL, MASK);

  const object = <T>(value: T): T => {
    if (typeof value === "string") return text(value) as T;
    if (Array.isArray(value)) return value.map(object) as T;
    if (value && typeof value === "object" && !(value instanceof Date)) {
      const out: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(value)) out[k] = sensitive(k) ? MASK : object(v);
      return out as T;
    }
    return value;
  };

  return {
    text,
    url(value) {
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
        return changed ? u.toString().replace(/%2A%2A%2A/g, MASK) : value;
      } catch {
        return text(value);
      }
    },
    object,
  };
}
