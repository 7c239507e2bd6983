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
import { type Hints, type JsonSchema, valid } from "./schema-values.ts";
import { type Invalid, violations } from "./schema-violations.ts";

export type { Invalid, JsonSchema };

export interface SchemaArbitraryOptions {
  /**
   * Values for properties by name, mixed with ones derived from the schema: what a schema
   * cannot say (a URL the SSRF allowlist takes, a real id, a well-formed secret). They must
   * satisfy the property's schema; they are never used for the one wrong value of an Invalid.
   */
  hints?: Hints;
}

const NO_HINTS: Hints = {};

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
