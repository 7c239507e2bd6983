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
  // each object's members, indexed on first use (a template asks for several of them)
  const objects = new Map<number, Map<string, number>>();
  const membersOf = (at: number) => {
    let members = objects.get(at);
    if (!members) {
      members = new Map();
      const m = members;
      forEachMember(json, at, (key, valueStart) => {
        m.set(key, valueStart); // a repeated key: its last value, as JSON.parse gives
        return false;
      });
      objects.set(at, members);
    }
    return members;
  };
  return {
    get(path) {
      let at = root;
      for (const segment of path) {
        const c = json[at];
        if (c === "{") {
          const found = membersOf(at).get(segment);
          if (found === undefined) return MISSING;
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
  if (c === '"') {
    const raw = json.slice(at + 1, end - 1);
    return { kind: "text", text: raw.includes("\\") ? (JSON.parse(`"${raw}"`) as string) : raw };
  }
  if (c === "{" || c === "[") return { kind: "composite", raw: json.slice(at, end) };
  const raw = json.slice(at, end);
  if (raw === "null") return MISSING;
  return { kind: "text", text: raw }; // a number as written, true, false
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
  // indexOf runs natively, several times faster than a loop over the characters here
  for (let from = i + 1; ; ) {
    const quote = json.indexOf('"', from);
    if (quote === -1) return json.length;
    // escaped when an odd number of backslashes comes before it
    let backslashes = 0;
    while (json.charCodeAt(quote - 1 - backslashes) === 0x5c) backslashes++;
    if (backslashes % 2 === 0) return quote + 1;
    from = quote + 1;
  }
}

/** Index just past the value starting at `i` (the text is valid JSON: the API parsed it). */
function skipValue(json: string, i: number): number {
  const c = json[i];
  if (c === '"') return skipString(json, i);
  if (c === "{" || c === "[") {
    let depth = 0;
    for (let j = i; j < json.length; j++) {
      const d = json.charCodeAt(j);
      if (d === 0x22) j = skipString(json, j) - 1;
      else if (d === 0x7b || d === 0x5b) depth++;
      else if (d === 0x7d || d === 0x5d) {
        depth--;
        if (depth === 0) return j + 1;
      }
    }
    return json.length;
  }
  let j = i;
  for (; j < json.length; j++) {
    const d = json.charCodeAt(j);
    // , } ] and whitespace end a number, true, false or null
    if (
      d === 0x2c ||
      d === 0x7d ||
      d === 0x5d ||
      d === 0x20 ||
      d === 0x0a ||
      d === 0x0d ||
      d === 0x09
    )
      break;
  }
  return j;
}
