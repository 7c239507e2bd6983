/**
 * Values a JSON schema accepts, as fast-check arbitraries (the valid half of
 * schema-arbitrary.ts), and the reading of a schema both halves share: which keywords are
 * supported, which types a schema allows, lengths in code points.
 */
import fc from "fast-check";

export type JsonSchema = { readonly [keyword: string]: unknown };
/** Values for properties by name (see SchemaArbitraryOptions). */
export type Hints = Readonly<Record<string, fc.Arbitrary<unknown>>>;

const TYPES = ["string", "integer", "number", "boolean", "null", "object", "array"] as const;
export type Type = (typeof TYPES)[number];

const SUPPORTED = new Set([
  "type",
  "nullable",
  "enum",
  "anyOf",
  "properties",
  "required",
  "additionalProperties",
  "maxProperties",
  "propertyNames",
  "minLength",
  "maxLength",
  "pattern",
  "format",
  "minimum",
  "maximum",
  "items",
  "minItems",
  "maxItems",
  "uniqueItems",
]);
/** Keywords that do not constrain a value (`default`: the server's Ajv fills it in). */
const ANNOTATIONS = new Set(["description", "default", "title", "examples", "$comment"]);

export function check(s: JsonSchema, path: string): void {
  for (const k of Object.keys(s)) {
    if (!SUPPORTED.has(k) && !ANNOTATIONS.has(k))
      throw new Error(`schema-arbitrary: unsupported keyword "${k}" at "${path}"`);
  }
  if (s.format !== undefined && s.format !== "date-time" && s.format !== "uri")
    throw new Error(`schema-arbitrary: unsupported format "${String(s.format)}" at "${path}"`);
}

export function typesOf(s: JsonSchema): Type[] {
  const declared = s.type === undefined ? [] : Array.isArray(s.type) ? s.type : [s.type];
  for (const t of declared)
    if (!TYPES.includes(t)) throw new Error(`schema-arbitrary: unknown type "${String(t)}"`);
  const types = [...(declared as Type[])];
  if (types.length === 0) {
    if (s.properties !== undefined) types.push("object");
    else if (s.items !== undefined) types.push("array");
    else if (s.enum === undefined && s.anyOf === undefined) types.push(...TYPES);
  }
  if (s.nullable === true && !types.includes("null")) types.push("null");
  return types;
}

export const num = (v: unknown): number | undefined => (typeof v === "number" ? v : undefined);
export const strs = (v: unknown): string[] => (Array.isArray(v) ? (v as string[]) : []);
export const schemaOf = (v: unknown): JsonSchema | undefined =>
  v !== null && typeof v === "object" && !Array.isArray(v) ? (v as JsonSchema) : undefined;
export const propertiesOf = (s: JsonSchema): Record<string, JsonSchema> =>
  (schemaOf(s.properties) ?? {}) as Record<string, JsonSchema>;
/** Ajv (like JSON Schema) measures strings in code points, not UTF-16 units. */
const cpLength = (s: string) => [...s].length;
/** A path segment as Ajv writes it in instancePath (RFC 6901). */
export const segment = (key: string) => key.replaceAll("~", "~0").replaceAll("/", "~1");
export const where = (path: string) => (path === "" ? "the value" : path.slice(1));

// ---------------------------------------------------------------------------------------
// building blocks

/** Any code point but NUL and the surrogates, mostly printable ASCII. */
export const safeChar = fc
  .oneof(
    { weight: 8, arbitrary: fc.integer({ min: 0x20, max: 0x7e }) },
    { weight: 1, arbitrary: fc.integer({ min: 0x01, max: 0x1f }) },
    { weight: 2, arbitrary: fc.integer({ min: 0x80, max: 0xd7ff }) },
    { weight: 1, arbitrary: fc.integer({ min: 0xe000, max: 0x10ffff }) },
  )
  .map((cp) => String.fromCodePoint(cp));

const FORBIDDEN_KEYS = new Set(["__proto__", "constructor"]);
const BAD_KEY = /"(?:__proto__|constructor)":/;

/** Any JSON value a route's body may carry where its schema says nothing. */
export const anyJson: fc.Arbitrary<unknown> = fc
  .jsonValue({ maxDepth: 2, stringUnit: safeChar })
  .filter((v) => !BAD_KEY.test(JSON.stringify(v)));

/** Repeats `s` until it is at least `n` code points long. */
export const repeatTo = (s: string, n: number) => s.repeat(Math.ceil(n / Math.max(1, cpLength(s))));

const ISO_MIN = new Date("1970-01-01T00:00:00Z");
const ISO_MAX = new Date("2100-01-01T00:00:00Z");
const isoDate = fc
  .date({ min: ISO_MIN, max: ISO_MAX, noInvalidDate: true })
  .map((d) => d.toISOString());

// ---------------------------------------------------------------------------------------
// valid values

/** Built arbitraries by schema object (and hints): the invalid ones reuse them many times. */
const built = new WeakMap<Hints, WeakMap<JsonSchema, fc.Arbitrary<unknown>>>();

export function valid(s: JsonSchema, path: string, hints: Hints): fc.Arbitrary<unknown> {
  const cache = built.get(hints) ?? new WeakMap<JsonSchema, fc.Arbitrary<unknown>>();
  built.set(hints, cache);
  const known = cache.get(s);
  if (known) return known;
  const arb = buildValid(s, path, hints);
  cache.set(s, arb);
  return arb;
}

function buildValid(s: JsonSchema, path: string, hints: Hints): fc.Arbitrary<unknown> {
  check(s, path);
  if (s.enum !== undefined) return fc.constantFrom(...(s.enum as unknown[]));
  if (s.anyOf !== undefined) {
    const { anyOf, ...rest } = s;
    return fc.oneof(
      ...(anyOf as JsonSchema[]).map((branch) => valid({ ...rest, ...branch }, path, hints)),
    );
  }
  const arbs = typesOf(s).map((t) => ({
    weight: t === "null" ? 1 : 4,
    arbitrary: validOfType(t, s, path, hints),
  }));
  return arbs.length === 1 ? arbs[0]!.arbitrary : fc.oneof(...arbs);
}

function validOfType(t: Type, s: JsonSchema, path: string, hints: Hints): fc.Arbitrary<unknown> {
  switch (t) {
    case "string":
      return validString(s);
    case "integer":
      return validInteger(s);
    case "number":
      return fc.double({
        min: num(s.minimum) ?? -1e12,
        max: num(s.maximum) ?? 1e12,
        noNaN: true,
        noDefaultInfinity: true,
      });
    case "boolean":
      return fc.boolean();
    case "null":
      return fc.constant(null);
    case "array":
      return validArray(s, path, hints);
    case "object":
      return validObject(s, path, hints);
  }
}

export function lengthOk(s: JsonSchema) {
  const min = num(s.minLength) ?? 0;
  const max = num(s.maxLength) ?? Number.POSITIVE_INFINITY;
  return (x: string) => cpLength(x) >= min && cpLength(x) <= max;
}

export function validString(s: JsonSchema): fc.Arbitrary<string> {
  const min = num(s.minLength) ?? 0;
  const max = num(s.maxLength);
  const ok = lengthOk(s);
  if (s.format === "date-time") return isoDate.filter(ok);
  if (s.format === "uri") return fc.webUrl().filter(ok);
  if (typeof s.pattern === "string") {
    const re = new RegExp(s.pattern, "u");
    const matching = fc.stringMatching(re).filter((x) => !x.includes("\u0000"));
    const arbs = [{ weight: 5, arbitrary: matching.filter(ok) }];
    // as long as allowed: a matching string repeated (true of the routes' `^[...]+$` patterns)
    if (max !== undefined && max <= 10_000)
      arbs.push({
        weight: 1,
        arbitrary: matching
          .filter((x) => x.length > 0)
          .map((x) => [...repeatTo(x, max)].slice(0, max).join(""))
          .filter((x) => re.test(x) && ok(x)),
      });
    return fc.oneof(...arbs);
  }
  const arbs = [
    {
      weight: 5,
      arbitrary: fc.string({
        unit: safeChar,
        minLength: min,
        maxLength: Math.min(max ?? min + 40, min + 40),
      }),
    },
  ];
  if (max !== undefined && max <= 10_000)
    arbs.push({
      weight: 1,
      arbitrary: fc.string({ unit: safeChar, minLength: max, maxLength: max }),
    });
  return fc.oneof(...arbs);
}

/** Whole numbers past Number.MAX_SAFE_INTEGER (and past bigint): JSON and Ajv take them. */
const BEYOND_SAFE = [2 ** 53, 2 ** 53 + 2, 2 ** 63, 1e20, 1e300];

function validInteger(s: JsonSchema): fc.Arbitrary<number> {
  const min = num(s.minimum) ?? Number.MIN_SAFE_INTEGER;
  const max = num(s.maximum) ?? Number.MAX_SAFE_INTEGER;
  const lo = Math.ceil(min);
  const hi = Math.floor(max);
  const edges = [...new Set([lo, hi, lo + 1, hi - 1, 0, 1, -1])].filter((n) => n >= lo && n <= hi);
  // Unbounded, a schema takes any whole number, also past what JavaScript and PostgreSQL hold.
  if (s.maximum === undefined) edges.push(...BEYOND_SAFE);
  if (s.minimum === undefined) edges.push(...BEYOND_SAFE.map((n) => -n));
  return fc.oneof(
    { weight: 3, arbitrary: fc.bigInt({ min: BigInt(lo), max: BigInt(hi) }).map(Number) },
    { weight: 1, arbitrary: fc.constantFrom(...edges) },
  );
}

export function arrayOf(
  s: JsonSchema,
  item: fc.Arbitrary<unknown>,
  minLength: number,
  maxLength: number,
) {
  return s.uniqueItems === true
    ? fc.uniqueArray(item, { minLength, maxLength, selector: (v) => JSON.stringify(v) })
    : fc.array(item, { minLength, maxLength });
}

function validArray(s: JsonSchema, path: string, hints: Hints): fc.Arbitrary<unknown[]> {
  const items = schemaOf(s.items);
  const item = items ? valid(items, `${path}/0`, hints) : anyJson;
  const min = num(s.minItems) ?? 0;
  const max = num(s.maxItems);
  const arbs = [{ weight: 5, arbitrary: arrayOf(s, item, min, Math.min(max ?? min + 6, min + 6)) }];
  if (max !== undefined && max <= 300)
    arbs.push({ weight: 1, arbitrary: arrayOf(s, item, max, max) });
  return fc.oneof(...arbs);
}

/** What an object may hold besides its declared properties: false, or keys and values. */
export function extrasOf(s: JsonSchema, path: string, hints: Hints) {
  if (s.additionalProperties === false) return null;
  const declared = propertiesOf(s);
  const names = schemaOf(s.propertyNames);
  const key = (
    names
      ? validString({ type: "string", ...names })
      : fc.string({ unit: safeChar, minLength: 1, maxLength: 20 })
  ).filter((k) => !FORBIDDEN_KEYS.has(k) && !Object.hasOwn(declared, k));
  const schema = schemaOf(s.additionalProperties);
  const value = schema ? valid(schema, `${path}/*`, hints) : anyJson;
  return { key, value };
}

/** A valid object; `without` leaves that property out (a test puts something else there). */
export function validObject(
  s: JsonSchema,
  path: string,
  hints: Hints,
  without?: string,
  room = 0,
): fc.Arbitrary<Record<string, unknown>> {
  const props = propertiesOf(s);
  const required = strs(s.required).filter((r) => r !== without);
  const model: Record<string, fc.Arbitrary<unknown>> = {};
  for (const [name, schema] of Object.entries(props)) {
    if (name === without) continue;
    const derived = valid(schema, `${path}/${segment(name)}`, hints);
    const hint = hints[name];
    model[name] = hint
      ? fc.oneof({ weight: 3, arbitrary: hint }, { weight: 1, arbitrary: derived })
      : derived;
  }
  for (const name of required) if (!(name in model)) model[name] = anyJson;
  const base = fc.record(model, { requiredKeys: required });
  const extras = extrasOf(s, path, hints);
  if (!extras) return base;
  const maxProps = num(s.maxProperties) ?? Number.POSITIVE_INFINITY;
  const pairs = (maxLength: number) =>
    fc.uniqueArray(fc.tuple(extras.key, extras.value), { maxLength, selector: ([k]) => k });
  const counts = [{ weight: 5, arbitrary: pairs(4) }];
  // now and then as many as allowed
  if (maxProps <= 100) counts.push({ weight: 1, arbitrary: pairs(maxProps) });
  return fc.tuple(base, fc.oneof(...counts)).map(([obj, more]) => {
    const out: Record<string, unknown> = { ...obj };
    const free = Math.max(0, maxProps - Object.keys(out).length - room);
    for (const [k, v] of more.slice(0, free)) out[k] = v;
    return out;
  });
}
