/**
 * Form posts of the dashboard and the portal (application/x-www-form-urlencoded): fields by
 * name, a repeated name (checkboxes) as an array, and the two ways pages read them.
 */

import { badRequest } from "../api/errors.ts";
import { utf8Problem } from "../api/utf8.ts";

export type FormBody = Record<string, string | string[]>;

/**
 * The body of a form post; the object has no prototype, so no field name can reach one.
 * Bytes that are not UTF-8, sent as such or %-escaped, are a 400 (docs/security.md, Input),
 * never decoded to U+FFFD.
 */
export function parseForm(body: string | Uint8Array): FormBody {
  const text = typeof body === "string" ? body : formText(body);
  const out: FormBody = Object.create(null);
  for (const [k, v] of new URLSearchParams(text)) {
    const prior = out[k];
    out[k] = prior === undefined ? v : Array.isArray(prior) ? [...prior, v] : [prior, v];
  }
  return out;
}

/** The form's text, or a 400 when its bytes, or its %-escaped bytes, are not UTF-8. */
function formText(bytes: Uint8Array): string {
  const raw = utf8Problem(bytes, "the form body");
  if (raw) throw badRequest(raw);
  if (utf8Problem(percentDecoded(bytes), "")) {
    throw badRequest("the form body is not valid UTF-8: a %-escape decodes to bytes that are not");
  }
  return Buffer.from(bytes).toString("utf8");
}

const hexValue = (c: number | undefined): number =>
  c === undefined
    ? -1
    : c >= 0x30 && c <= 0x39
      ? c - 0x30
      : (c | 0x20) >= 0x61 && (c | 0x20) <= 0x66
        ? (c | 0x20) - 0x57
        : -1;

/** The bytes with every %XX escape decoded, as URLSearchParams decodes them. */
function percentDecoded(bytes: Uint8Array): Uint8Array {
  const out = new Uint8Array(bytes.length);
  let n = 0;
  for (let i = 0; i < bytes.length; i++) {
    const hi = bytes[i] === 0x25 ? hexValue(bytes[i + 1]) : -1;
    const lo = hi >= 0 ? hexValue(bytes[i + 2]) : -1;
    if (lo >= 0) {
      out[n++] = hi * 16 + lo;
      i += 2;
    } else {
      out[n++] = bytes[i]!;
    }
  }
  return out.subarray(0, n);
}

/**
 * A form field's first value, trimmed ("" when absent). A route that takes forms may be
 * sent JSON instead, whose values can be anything: only a string counts as a value.
 */
export const field = (body: unknown, name: string): string => {
  const v: unknown = (body as FormBody | undefined)?.[name];
  const first: unknown = Array.isArray(v) ? v[0] : v;
  return typeof first === "string" ? first.trim() : "";
};

/** Every value of a repeated form field (only strings count, as for `field`). */
export const fields = (body: unknown, name: string): string[] => {
  const v: unknown = (body as FormBody | undefined)?.[name];
  const all: unknown[] = v === undefined ? [] : Array.isArray(v) ? v : [v];
  return all.filter((x): x is string => typeof x === "string");
};
