/**
 * Finds the exact source text of one top-level member of a JSON object, so a message's
 * payload can be stored and sent byte for byte as the producer wrote it (key order,
 * number formatting, big integers), never re-serialized. The input must already be valid
 * JSON (it is parsed first); this scanner only locates spans.
 */

/** The raw text of `name`'s value in the top-level object `json`, or undefined. */
export function rawMember(json: string, name: string): string | undefined {
  let i = skipWs(json, 0);
  if (json[i] !== "{") return undefined;
  i = skipWs(json, i + 1);
  let found: string | undefined;
  while (i < json.length && json[i] !== "}") {
    const keyEnd = skipString(json, i);
    const key = JSON.parse(json.slice(i, keyEnd)) as string;
    i = skipWs(json, keyEnd);
    i = skipWs(json, i + 1); // past ':'
    const valueEnd = skipValue(json, i);
    // The last duplicate wins, as in JSON.parse.
    if (key === name) found = json.slice(i, valueEnd);
    i = skipWs(json, valueEnd);
    if (json[i] === ",") i = skipWs(json, i + 1);
  }
  return found;
}

function skipWs(s: string, i: number): number {
  while (i < s.length) {
    const c = s.charCodeAt(i);
    if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) break;
    i++;
  }
  return i;
}

/** `i` is at an opening quote; returns the index just past the closing quote. */
function skipString(s: string, i: number): number {
  i++;
  while (i < s.length) {
    const c = s[i];
    if (c === "\\") i += 2;
    else if (c === '"') return i + 1;
    else i++;
  }
  return i;
}

function skipValue(s: string, i: number): number {
  const c = s[i];
  if (c === '"') return skipString(s, i);
  if (c === "{" || c === "[") {
    let depth = 0;
    while (i < s.length) {
      const d = s[i];
      if (d === '"') {
        i = skipString(s, i);
        continue;
      }
      if (d === "{" || d === "[") depth++;
      else if (d === "}" || d === "]") {
        depth--;
        if (depth === 0) return i + 1;
      }
      i++;
    }
    return i;
  }
  // number, true, false, null
  while (i < s.length && !",}] \n\r\t".includes(s[i]!)) i++;
  return i;
}
