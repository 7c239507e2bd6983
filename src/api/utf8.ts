/**
 * Strict UTF-8 checking of request bodies (docs/security.md, Input): a body that is not
 * well-formed UTF-8 is refused rather than decoded with U+FFFD in place of the bad bytes,
 * which would store, sign and send bytes the client never sent.
 */
import { isUtf8 } from "node:buffer";

/**
 * The byte offset where `bytes` stops being well-formed UTF-8 (RFC 3629: no overlong forms,
 * no encoded surrogates, nothing above U+10FFFF, no cut-off sequence), or -1 when it is.
 */
export function invalidUtf8Offset(bytes: Uint8Array): number {
  if (isUtf8(bytes)) return -1;
  let i = 0;
  while (i < bytes.length) {
    const lead = bytes[i]!;
    if (lead < 0x80) {
      i++;
      continue;
    }
    let more: number;
    if (lead >= 0xc2 && lead <= 0xdf) more = 1;
    else if (lead >= 0xe0 && lead <= 0xef) more = 2;
    else if (lead >= 0xf0 && lead <= 0xf4) more = 3;
    else return i;
    // the second byte's range rules out overlong forms, surrogates and code points past U+10FFFF
    const low = lead === 0xe0 ? 0xa0 : lead === 0xf0 ? 0x90 : 0x80;
    const high = lead === 0xed ? 0x9f : lead === 0xf4 ? 0x8f : 0xbf;
    for (let k = 1; k <= more; k++) {
      const c = bytes[i + k];
      if (c === undefined || c < (k === 1 ? low : 0x80) || c > (k === 1 ? high : 0xbf)) return i;
    }
    i += more + 1;
  }
  return -1;
}

/** A sentence saying where `bytes` stops being UTF-8, or null when it is well-formed. */
export function utf8Problem(bytes: Uint8Array, what: string): string | null {
  const at = invalidUtf8Offset(bytes);
  if (at < 0) return null;
  const hex = Array.from(bytes.subarray(at, at + 4), (b) => b.toString(16).padStart(2, "0"));
  return `${what} is not valid UTF-8: byte offset ${at} (bytes ${hex.join(" ")}) does not start a well-formed character`;
}
