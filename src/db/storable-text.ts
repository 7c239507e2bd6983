/**
 * Text from strangers (response bodies, error texts, URLs, header values), made storable in
 * a PostgreSQL `text` column (docs/reliability.md, Poison rows). A text value cannot hold a
 * NUL character, and one NUL in a batched statement fails the whole statement; each NUL
 * becomes U+FFFD. (Lone UTF-16 surrogates need nothing here: node-postgres encodes
 * parameters as UTF-8, which writes each as U+FFFD.)
 */

/** `value` without NUL characters; the same string when it has none (the usual case). */
export function storableText(value: string): string;
export function storableText(value: string | null): string | null;
export function storableText(value: string | null): string | null {
  if (value === null || !value.includes("\0")) return value;
  return value.replaceAll("\0", "\uFFFD");
}

/**
 * `value` as plain printable ASCII (anything else escaped as \uXXXX), at most `max`
 * characters: the last-resort form of a text PostgreSQL refused once already.
 */
export function asciiText(value: string | null, max = 1024): string | null {
  if (value === null) return null;
  let out = "";
  for (const ch of value) {
    const code = ch.codePointAt(0)!;
    out += code >= 0x20 && code < 0x7f ? ch : `\\u${code.toString(16).padStart(4, "0")}`;
    if (out.length >= max) return out.slice(0, max);
  }
  return out;
}
