/**
 * Values out of a stored payload's JSON text (messages.payload: the producer's bytes), for
 * URL templates and form bodies (README.md, Postbacks). Numbers keep the text the producer
 * wrote (`99.50` stays `99.50`, a 20-digit id stays whole): the text is scanned, never
 * turned into JS numbers. Only the values asked for are decoded.
 */

/** One value: its text as a template or form shows it, or why there is none. */
export type FieldValue =
  | { kind: "text"; text: string }
  /** null, or no such field */
  | { kind: "missing" }
  /** an object or array: `raw` is its JSON text as sent */
  | { kind: "composite"; raw: string };

const MISSING: FieldValue = { kind: "missing" };

/** A JSON document scanned lazily: values are found by path, decoded when asked for. */
export interface PayloadFields {
  /** the value at a dotted path (`["user", "id"]`; a digit segment indexes an array) */
  get(path: readonly string[]): FieldValue;
  /** the top-level fields of an object payload, in order (a repeated key: its last value); null when the payload is not an object */
  topLevel(): Array<[string, FieldValue]> | null;
}

export function payloadFields(json: string): PayloadFields {
  const root = skipWs(json, 0);
  return {
    get(path) {
      let at = root;
      for (const segment of path) {
        const c = json[at];
        if (c === "{") {
          const found = memberOf(json, at, segment);
          if (found === -1) return MISSING;
          at = found;
        } else if (c === "[" && /^\d+$/.test(segment)) {
          const found = elementOf(json, at, Number(segment));
          if (found === -1) return MISSING;
          at = found;
        } else {
          return MISSING;
        }
      }
      return valueAt(json, at);
    },
    topLevel() {
      if (json[root] !== "{") return null;
      const fields = new Map<string, FieldValue>();
      forEachMember(json, root, (key, at) => {
        fields.delete(key); // a repeated key takes its last place, as JSON.parse gives its last value
        fields.set(key, valueAt(json, at));
        return false;
      });
      return [...fields];
    },
  };
}

function valueAt(json: string, at: number): FieldValue {
  const c = json[at];
  const end = skipValue(json, at);
  if (c === '"') return { kind: "text", text: JSON.parse(json.slice(at, end)) as string };
  if (c === "{" || c === "[") return { kind: "composite", raw: json.slice(at, end) };
  const raw = json.slice(at, end);
  if (raw === "null") return MISSING;
  return { kind: "text", text: raw }; // a number as written, true, false
}

/** Start of the value of the last member named `key` of the object at `at`, or -1. */
function memberOf(json: string, at: number, key: string): number {
  let found = -1;
  forEachMember(json, at, (name, valueStart) => {
    if (name === key) found = valueStart;
    return false;
  });
  return found;
}

/** Start of element `index` of the array at `at`, or -1. */
function elementOf(json: string, at: number, index: number): number {
  let i = skipWs(json, at + 1);
  if (json[i] === "]") return -1;
  for (let n = 0; ; n++) {
    if (n === index) return i;
    i = skipWs(json, skipValue(json, i));
    if (json[i] !== ",") return -1;
    i = skipWs(json, i + 1);
  }
}

/** Calls `visit(key, valueStart)` for each member of the object at `at` until it returns true. */
function forEachMember(
  json: string,
  at: number,
  visit: (key: string, valueStart: number) => boolean,
): void {
  let i = skipWs(json, at + 1);
  if (json[i] === "}") return;
  for (;;) {
    const keyEnd = skipString(json, i);
    const rawKey = json.slice(i, keyEnd);
    // most keys have no escapes: the text between the quotes is the key
    const key = rawKey.includes("\\") ? (JSON.parse(rawKey) as string) : rawKey.slice(1, -1);
    i = skipWs(json, skipWs(json, keyEnd) + 1); // past ':'
    if (visit(key, i)) return;
    i = skipWs(json, skipValue(json, i));
    if (json[i] !== ",") return;
    i = skipWs(json, i + 1);
  }
}

function skipWs(json: string, i: number): number {
  for (;;) {
    const c = json.charCodeAt(i);
    if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) return i;
    i++;
  }
}

/** Index just past the string starting at `i` (a quote). */
function skipString(json: string, i: number): number {
  for (let j = i + 1; j < json.length; j++) {
    const c = json[j];
    if (c === "\\") j++;
    else if (c === '"') return j + 1;
  }
  return json.length;
}

/** Index just past the value starting at `i` (the text is valid JSON: the API parsed it). */
function skipValue(json: string, i: number): number {
  const c = json[i];
  if (c === '"') return skipString(json, i);
  if (c === "{" || c === "[") {
    let depth = 0;
    for (let j = i; j < json.length; j++) {
      const d = json[j];
      if (d === '"') j = skipString(json, j) - 1;
      else if (d === "{" || d === "[") depth++;
      else if (d === "}" || d === "]") {
        depth--;
        if (depth === 0) return j + 1;
      }
    }
    return json.length;
  }
  let j = i;
  while (j < json.length && !",}] \n\r\t".includes(json[j]!)) j++;
  return j;
}
