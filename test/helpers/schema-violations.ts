/**
 * Values a JSON schema refuses, each wrong in exactly one named way (the invalid half of
 * schema-arbitrary.ts): every way a schema node can be violated, as one arbitrary each, the
 * rest of the value valid.
 */
import fc from "fast-check";
import {
  anyJson,
  arrayOf,
  check,
  extrasOf,
  type Hints,
  type JsonSchema,
  lengthOk,
  num,
  propertiesOf,
  repeatTo,
  safeChar,
  schemaOf,
  segment,
  strs,
  type Type,
  typesOf,
  valid,
  validObject,
  validString,
  where,
} from "./schema-values.ts";

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

/** Every way `s` can be violated at `path`, one arbitrary each; none when it takes anything. */
export function violations(s: JsonSchema, path: string, hints: Hints): fc.Arbitrary<Invalid>[] {
  check(s, path);
  const out: fc.Arbitrary<Invalid>[] = [];
  if (s.anyOf !== undefined) {
    // only a value of a type no branch takes (a branch may be an anyOf of its own: a
    // bulk replay's status is null, one status or a list of them)
    const branchTypes = (b: JsonSchema): Type[] =>
      b.anyOf !== undefined ? (b.anyOf as JsonSchema[]).flatMap(branchTypes) : typesOf({ ...b });
    const types = (s.anyOf as JsonSchema[]).flatMap(branchTypes);
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
