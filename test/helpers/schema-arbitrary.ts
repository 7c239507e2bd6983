/**
 * fast-check arbitraries derived from a JSON schema: values the schema accepts, and values it
 * refuses, each wrong in exactly one named way (an `Invalid`: where, which keyword, why).
 *
 * It covers the subset of JSON Schema the route schemas use (`schema.body` in
 * src/api/routes/*.ts): type (one or a list; `nullable`), properties, required,
 * additionalProperties (false or a schema), maxProperties, propertyNames, minLength,
 * maxLength, pattern, enum, format (date-time, uri), minimum, maximum, items, minItems,
 * maxItems, uniqueItems, anyOf. Any other keyword throws, so a schema that grows one fails
 * here loudly rather than being fuzzed with the wrong shapes.
 *
 * Strings hold no NUL and no lone surrogate (the API refuses those before validation,
 * docs/security.md "Input"), and object keys are never `__proto__` or `constructor` (the
 * JSON parser refuses those), so a valid value reaches the route's schema and handler.
 */
import fc from "fast-check";

export type JsonSchema = { readonly [keyword: string]: unknown };

/** A value its schema refuses for one reason. */
export interface Invalid {
  value: unknown;
  /** where the violation is, as Ajv's instancePath ("" for the whole value, "/name") */
  at: string;
  /** the keyword violated, as Ajv names it in its errors */
  keyword: string;
  /** for `required` and `additionalProperties`: the property missing or not allowed */
  property?: string;
  /** what is wrong, for humans */
  reason: string;
}

export interface SchemaArbitraryOptions {
  /**
   * Values for properties by name, mixed with ones derived from the schema: what a schema
   * cannot say (a URL the SSRF allowlist takes, a real id, a well-formed secret). They must
   * satisfy the property's schema; they are never used for the one wrong value of an Invalid.
   */
  hints?: Readonly<Record<string, fc.Arbitrary<unknown>>>;
}

const TYPES = ["string", "integer", "number", "boolean", "null", "object", "array"] as const;
type Type = (typeof TYPES)[number];

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

/** Values `schema` accepts. */
export function validValue(
  schema: JsonSchema,
  options: SchemaArbitraryOptions = {},
): fc.Arbitrary<unknown> {
  return valid(schema, "", options.hints ?? NO_HINTS);
}

/** Values `schema` refuses, each for one reason; throws when it refuses none (`{}`). */
export function invalidValue(
  schema: JsonSchema,
  options: SchemaArbitraryOptions = {},
): fc.Arbitrary<Invalid> {
  const all = violations(schema, "", options.hints ?? NO_HINTS);
  if (all.length === 0) throw new Error("schema-arbitrary: this schema refuses nothing");
  return fc.oneof(...all);
}

// ---------------------------------------------------------------------------------------
// the pieces of a schema

type Hints = Readonly<Record<string, fc.Arbitrary<unknown>>>;
const NO_HINTS: Hints = {};

function check(s: JsonSchema, path: string): void {
  for (const k of Object.keys(s)) {
    if (!SUPPORTED.has(k) && !ANNOTATIONS.has(k))
      throw new Error(`schema-arbitrary: unsupported keyword "${k}" at "${path}"`);
  }
  if (s.format !== undefined && s.format !== "date-time" && s.format !== "uri")
    throw new Error(`schema-arbitrary: unsupported format "${String(s.format)}" at "${path}"`);
}

function typesOf(s: JsonSchema): Type[] {
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

const num = (v: unknown): number | undefined => (typeof v === "number" ? v : undefined);
const strs = (v: unknown): string[] => (Array.isArray(v) ? (v as string[]) : []);
const schemaOf = (v: unknown): JsonSchema | undefined =>
  v !== null && typeof v === "object" && !Array.isArray(v) ? (v as JsonSchema) : undefined;
const propertiesOf = (s: JsonSchema): Record<string, JsonSchema> =>
  (schemaOf(s.properties) ?? {}) as Record<string, JsonSchema>;
/** Ajv (like JSON Schema) measures strings in code points, not UTF-16 units. */
const cpLength = (s: string) => [...s].length;
/** A path segment as Ajv writes it in instancePath (RFC 6901). */
const segment = (key: string) => key.replaceAll("~", "~0").replaceAll("/", "~1");
const where = (path: string) => (path === "" ? "the value" : path.slice(1));

// ---------------------------------------------------------------------------------------
// building blocks

/** Any code point but NUL and the surrogates, mostly printable ASCII. */
const safeChar = fc
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
const anyJson: fc.Arbitrary<unknown> = fc
  .jsonValue({ maxDepth: 2, stringUnit: safeChar })
  .filter((v) => !BAD_KEY.test(JSON.stringify(v)));

/** Repeats `s` until it is at least `n` code points long. */
const repeatTo = (s: string, n: number) => s.repeat(Math.ceil(n / Math.max(1, cpLength(s))));

const ISO_MIN = new Date("1970-01-01T00:00:00Z");
const ISO_MAX = new Date("2100-01-01T00:00:00Z");
const isoDate = fc
  .date({ min: ISO_MIN, max: ISO_MAX, noInvalidDate: true })
  .map((d) => d.toISOString());
/** Strings that look like a date-time and are not one (RFC 3339, as ajv-formats checks). */
const NOT_DATE_TIMES = [
  "not a date",
  "2024-02-30T00:00:00Z",
  "2024-01-01T24:00:00Z",
  "2024-13-01T00:00:00Z",
  "275760-09-13T00:00:00.000Z",
  "2024-01-01",
  "2024-01-01T00:00:00",
  "1704067200",
];
const NOT_URIS = ["not a uri", "//no-scheme", "http//x", "a b:c", ":"];

// ---------------------------------------------------------------------------------------
// valid values

/** Built arbitraries by schema object (and hints): the invalid ones reuse them many times. */
const built = new WeakMap<Hints, WeakMap<JsonSchema, fc.Arbitrary<unknown>>>();

function valid(s: JsonSchema, path: string, hints: Hints): fc.Arbitrary<unknown> {
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

function lengthOk(s: JsonSchema) {
  const min = num(s.minLength) ?? 0;
  const max = num(s.maxLength) ?? Number.POSITIVE_INFINITY;
  return (x: string) => cpLength(x) >= min && cpLength(x) <= max;
}

function validString(s: JsonSchema): fc.Arbitrary<string> {
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

function validInteger(s: JsonSchema): fc.Arbitrary<number> {
  const min = num(s.minimum) ?? Number.MIN_SAFE_INTEGER;
  const max = num(s.maximum) ?? Number.MAX_SAFE_INTEGER;
  const lo = Math.ceil(min);
  const hi = Math.floor(max);
  const edges = [...new Set([lo, hi, lo + 1, hi - 1, 0, 1, -1])].filter((n) => n >= lo && n <= hi);
  return fc.oneof(
    { weight: 3, arbitrary: fc.bigInt({ min: BigInt(lo), max: BigInt(hi) }).map(Number) },
    { weight: 1, arbitrary: fc.constantFrom(...edges) },
  );
}

function arrayOf(s: JsonSchema, item: fc.Arbitrary<unknown>, minLength: number, maxLength: number) {
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
function extrasOf(s: JsonSchema, path: string, hints: Hints) {
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
function validObject(
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

// ---------------------------------------------------------------------------------------
// invalid values: each arbitrary below is one way to be wrong

const WRONG_TYPE_VALUES: [Type, unknown][] = [
  ["string", "1"],
  ["string", "true"],
  ["integer", 7],
  ["number", 1.5],
  ["boolean", true],
  ["null", null],
  ["object", {}],
  ["array", []],
  ["array", ["x"]],
];

function accepts(types: Type[], t: Type): boolean {
  if (types.includes(t)) return true;
  return t === "integer" && types.includes("number");
}

function violations(s: JsonSchema, path: string, hints: Hints): fc.Arbitrary<Invalid>[] {
  check(s, path);
  const out: fc.Arbitrary<Invalid>[] = [];
  if (s.anyOf !== undefined) {
    // only a value of a type no branch takes: enough for the nullable unions routes use
    const types = (s.anyOf as JsonSchema[]).flatMap((b) => typesOf({ ...b }));
    out.push(...wrongType(types, path));
    return out;
  }
  const types = typesOf(s);
  if (s.type !== undefined || s.nullable !== undefined) out.push(...wrongType(types, path));
  if (s.enum !== undefined) {
    const allowed = s.enum as unknown[];
    const strings = allowed.filter((v): v is string => typeof v === "string");
    const candidates = [
      ...strings.map((v) => `${v}x`),
      ...strings.map((v) => v.toUpperCase()),
      "",
    ].filter((v) => !allowed.includes(v));
    if (candidates.length > 0)
      out.push(
        fc.constantFrom(...candidates).map((value) => ({
          value,
          at: path,
          keyword: "enum",
          reason: `${where(path)}: ${JSON.stringify(value)} is not one of ${JSON.stringify(allowed)}`,
        })),
      );
    return out;
  }
  for (const t of types) {
    if (t === "string") out.push(...stringViolations(s, path));
    else if (t === "integer" || t === "number") out.push(...numberViolations(s, path, t));
    else if (t === "array") out.push(...arrayViolations(s, path, hints));
    else if (t === "object") out.push(...objectViolations(s, path, hints));
  }
  return out;
}

function wrongType(types: Type[], path: string): fc.Arbitrary<Invalid>[] {
  const wrong = WRONG_TYPE_VALUES.filter(([t]) => !accepts(types, t)).map(([, v]) => v);
  if (types.includes("integer") && !types.includes("number")) wrong.push(2.5);
  if (wrong.length === 0) return [];
  return [
    fc.constantFrom(...wrong).map((value) => ({
      value: structuredClone(value),
      at: path,
      keyword: "type",
      reason: `${where(path)}: ${JSON.stringify(value)} where ${types.join(" or ")} is expected`,
    })),
  ];
}

function stringViolations(s: JsonSchema, path: string): fc.Arbitrary<Invalid>[] {
  const out: fc.Arbitrary<Invalid>[] = [];
  const min = num(s.minLength);
  const max = num(s.maxLength);
  const inBounds = lengthOk(s);
  if (max !== undefined)
    out.push(
      fc
        .tuple(
          validString({ ...s, minLength: 1, maxLength: undefined }),
          fc.integer({ min: 1, max: 3 }),
        )
        .map(([x, extra]) => ({
          value: repeatTo(x, max + extra),
          at: path,
          keyword: "maxLength",
          reason: `${where(path)}: longer than ${max} characters`,
        })),
    );
  if (min !== undefined && min > 0)
    out.push(
      fc.string({ unit: safeChar, maxLength: min - 1 }).map((value) => ({
        value,
        at: path,
        keyword: "minLength",
        reason: `${where(path)}: shorter than ${min} characters`,
      })),
    );
  if (typeof s.pattern === "string") {
    const re = new RegExp(s.pattern, "u");
    const odd = fc.oneof(safeChar, fc.constantFrom(" ", "/", "\n", "é", "💥", "\u2028", "%", "'"));
    out.push(
      fc
        .string({
          unit: odd,
          minLength: Math.max(1, min ?? 0),
          maxLength: Math.min(max ?? 30, 30),
        })
        .filter((x) => inBounds(x) && !re.test(x))
        .map((value) => ({
          value,
          at: path,
          keyword: "pattern",
          reason: `${where(path)}: ${JSON.stringify(value)} does not match ${s.pattern}`,
        })),
    );
  }
  const misses = s.format === "date-time" ? NOT_DATE_TIMES : s.format === "uri" ? NOT_URIS : [];
  const fitting = misses.filter(inBounds);
  if (fitting.length > 0)
    out.push(
      fc.constantFrom(...fitting).map((value) => ({
        value,
        at: path,
        keyword: "format",
        reason: `${where(path)}: ${JSON.stringify(value)} is not a ${String(s.format)}`,
      })),
    );
  return out;
}

function numberViolations(s: JsonSchema, path: string, t: Type): fc.Arbitrary<Invalid>[] {
  const out: fc.Arbitrary<Invalid>[] = [];
  const step = t === "integer" ? 1 : 0.5;
  const min = num(s.minimum);
  const max = num(s.maximum);
  if (min !== undefined)
    out.push(
      fc.integer({ min: 1, max: 1000 }).map((k) => ({
        value: k === 1 ? min - step : min - k * step,
        at: path,
        keyword: "minimum",
        reason: `${where(path)}: below the minimum ${min}`,
      })),
    );
  if (max !== undefined)
    out.push(
      fc.integer({ min: 1, max: 1000 }).map((k) => ({
        value: k === 1 ? max + step : max + k * step,
        at: path,
        keyword: "maximum",
        reason: `${where(path)}: above the maximum ${max}`,
      })),
    );
  return out;
}

function arrayViolations(s: JsonSchema, path: string, hints: Hints): fc.Arbitrary<Invalid>[] {
  const out: fc.Arbitrary<Invalid>[] = [];
  const items = schemaOf(s.items);
  const item = items ? valid(items, `${path}/0`, hints) : anyJson;
  const min = num(s.minItems) ?? 0;
  const max = num(s.maxItems);
  if (max !== undefined)
    out.push(
      arrayOf(s, item, max + 1, max + 1).map((value) => ({
        value,
        at: path,
        keyword: "maxItems",
        reason: `${where(path)}: more than ${max} items`,
      })),
    );
  if (min > 0)
    out.push(
      arrayOf(s, item, 0, min - 1).map((value) => ({
        value,
        at: path,
        keyword: "minItems",
        reason: `${where(path)}: fewer than ${min} items`,
      })),
    );
  const room = (max ?? 8) - 1;
  if (s.uniqueItems === true && room >= 1)
    out.push(
      arrayOf(s, item, Math.max(1, min - 1), Math.min(room, 5)).map((xs) => ({
        value: [...xs, structuredClone(xs[0])],
        at: path,
        keyword: "uniqueItems",
        reason: `${where(path)}: the same item twice`,
      })),
    );
  if (items && room >= 0)
    for (const bad of violations(items, `${path}/0`, hints))
      out.push(
        fc
          .tuple(bad, arrayOf(s, item, Math.max(0, min - 1), Math.min(room, 4)))
          .map(([inv, rest]) => ({
            ...inv,
            value: [inv.value, ...rest],
          })),
      );
  return out;
}

function objectViolations(s: JsonSchema, path: string, hints: Hints): fc.Arbitrary<Invalid>[] {
  const out: fc.Arbitrary<Invalid>[] = [];
  const props = propertiesOf(s);
  for (const name of strs(s.required))
    out.push(
      validObject(s, path, hints, name).map((value) => ({
        value,
        at: path,
        keyword: "required",
        property: name,
        reason: `${where(path)}: required property "${name}" missing`,
      })),
    );
  const extras = extrasOf(s, path, hints);
  if (!extras) {
    const first = Object.keys(props)[0] ?? "field";
    const unknown = ["extra", "unknown", `${first}_`, first.toUpperCase(), `${first} `].filter(
      (k) => !Object.hasOwn(props, k),
    );
    out.push(
      fc
        .tuple(validObject(s, path, hints), fc.constantFrom(...unknown), anyJson)
        .map(([obj, key, v]) => ({
          value: { ...obj, [key]: v },
          at: path,
          keyword: "additionalProperties",
          property: key,
          reason: `${where(path)}: unknown property "${key}"`,
        })),
    );
  } else {
    const maxProps = num(s.maxProperties);
    if (maxProps !== undefined && maxProps <= 100)
      out.push(
        fc
          .tuple(
            validObject(s, path, hints),
            fc.uniqueArray(fc.tuple(extras.key, extras.value), {
              minLength: maxProps + 1,
              maxLength: maxProps + 1,
              selector: ([k]) => k,
            }),
          )
          .map(([obj, more]) => {
            const value: Record<string, unknown> = { ...obj };
            for (const [k, v] of more) value[k] = v;
            return {
              value,
              at: path,
              keyword: "maxProperties",
              reason: `${where(path)}: more than ${maxProps} properties`,
            };
          }),
      );
    const names = schemaOf(s.propertyNames);
    if (names)
      for (const bad of stringViolations({ type: "string", ...names }, path))
        out.push(
          fc
            .tuple(validObject(s, path, hints, undefined, 1), bad, extras.value)
            .map(([obj, inv, v]) => {
              const key = String(inv.value);
              return {
                value: { ...obj, [key]: v },
                at: path,
                keyword: "propertyNames",
                reason: `${where(path)}: property name ${JSON.stringify(key)}: ${inv.reason}`,
              };
            }),
        );
    const schema = schemaOf(s.additionalProperties);
    // "fuzz" is a name every propertyNames of the routes takes
    if (schema)
      for (const bad of violations(schema, `${path}/fuzz`, hints))
        out.push(
          fc.tuple(validObject(s, path, hints, "fuzz", 1), bad).map(([obj, inv]) => ({
            ...inv,
            value: { ...obj, fuzz: inv.value },
          })),
        );
  }
  for (const [name, schema] of Object.entries(props))
    for (const bad of violations(schema, `${path}/${segment(name)}`, hints))
      out.push(
        fc.tuple(validObject(s, path, hints, name), bad).map(([obj, inv]) => ({
          ...inv,
          value: { ...obj, [name]: inv.value },
        })),
      );
  return out;
}
