/**
 * The fuzz generator that derives bodies from JSON schemas (test/helpers/schema-arbitrary.ts),
 * checked with the API's own body validator (src/api/validators.ts: no type coercion,
 * formats, our uniqueItems): for every route's own body schema, each valid sample passes, and each
 * invalid sample fails for the reason it names and for no other.
 */
import type { ErrorObject } from "ajv";
import fc from "fast-check";
import { afterAll, beforeAll, expect, test } from "vitest";
import { appIn } from "../src/api/routes/applications.ts";
import { bodyAjv } from "../src/api/validators.ts";
import { createTestDb, type TestDb } from "./helpers/db.ts";
import { BODY_HINTS, routeBodySchemas } from "./helpers/route-bodies.ts";
import {
  type Invalid,
  invalidValue,
  type JsonSchema,
  validValue,
} from "./helpers/schema-arbitrary.ts";

let db: TestDb;
let schemas = new Map<string, JsonSchema>();

beforeAll(async () => {
  db = await createTestDb();
  schemas = await routeBodySchemas(db.pool);
});
afterAll(async () => {
  await db?.drop();
});

// The server's body validator, but reporting every error, not only the first.
const ajv = bodyAjv({ allErrors: true });
/** What goes over the wire: the JSON text, parsed again. */
const sent = (v: unknown): unknown => JSON.parse(JSON.stringify(v));

/** A schema using what the routes do not (yet): uri, number, anyOf, nullable, minItems. */
const OTHER_KEYWORDS: JsonSchema = {
  type: "object",
  required: ["link", "tags"],
  additionalProperties: false,
  properties: {
    link: { type: "string", format: "uri", maxLength: 200 },
    ratio: { type: "number", minimum: 0, maximum: 1 },
    choice: {
      anyOf: [
        { type: "string", maxLength: 3 },
        { type: "integer", minimum: 5 },
      ],
    },
    note: { type: "string", nullable: true, minLength: 2 },
    tags: {
      type: "array",
      minItems: 1,
      maxItems: 3,
      uniqueItems: true,
      items: { type: "object", required: ["k"], properties: { k: { type: "boolean" } } },
    },
  },
};

function checkValid(name: string, schema: JsonSchema) {
  const validate = ajv.compile(schema);
  fc.assert(
    fc.property(validValue(schema, { hints: BODY_HINTS }), (v) => {
      const body = sent(v);
      if (!validate(body))
        throw new Error(`${name}: ${JSON.stringify(body)}: ${ajv.errorsText(validate.errors)}`);
    }),
    { numRuns: 60 },
  );
}

/** The error Ajv reports for the violation `inv` names. */
const names = (inv: Invalid) => (e: ErrorObject) =>
  e.keyword === inv.keyword &&
  e.instancePath === inv.at &&
  (inv.property === undefined ||
    e.params.missingProperty === inv.property ||
    e.params.additionalProperty === inv.property);

function checkInvalid(name: string, schema: JsonSchema) {
  const validate = ajv.compile(schema);
  fc.assert(
    fc.property(invalidValue(schema, { hints: BODY_HINTS }), (inv) => {
      const body = sent(inv.value);
      const what = `${name} (${inv.reason}): ${JSON.stringify(body).slice(0, 300)}`;
      expect(validate(body), what).toBe(false);
      const errors = validate.errors ?? [];
      expect(errors.some(names(inv)), `${what}: ${ajv.errorsText(errors)}`).toBe(true);
      // and nothing else is wrong: every error is about that place or inside it
      for (const e of errors)
        expect(
          e.instancePath === inv.at || e.instancePath.startsWith(`${inv.at}/`),
          `${what}: ${ajv.errorsText(errors)}`,
        ).toBe(true);
    }),
    { numRuns: 60 },
  );
}

test("the schemas are the routes' own objects, one for each route that takes a body", () => {
  expect(schemas.get("POST /api/v1/app")).toBe(appIn);
  expect(schemas.size).toBeGreaterThan(12);
  for (const key of schemas.keys()) expect(key).toMatch(/^(POST|PUT|PATCH|DELETE) \/api\/v1\//);
});

test("valid samples (with the hints) pass the schema they came from", () => {
  for (const [route, schema] of schemas) checkValid(route, schema);
  checkValid("other keywords", OTHER_KEYWORDS);
});

test("invalid samples fail for the reason they name, and for no other", () => {
  for (const [route, schema] of schemas) checkInvalid(route, schema);
  checkInvalid("other keywords", OTHER_KEYWORDS);
});

test("uniqueItems catches every duplicate, __proto__ and reordered object keys too", () => {
  const strings = ajv.compile({ type: "array", items: { type: "string" }, uniqueItems: true });
  expect(strings(["__proto__", "x", "__proto__"])).toBe(false);
  expect(strings.errors?.[0]).toMatchObject({ keyword: "uniqueItems", params: { i: 2, j: 0 } });
  expect(strings(["constructor", "toString", "hasOwnProperty"])).toBe(true);
  const any = ajv.compile({ type: "array", uniqueItems: true });
  expect(
    any([
      { a: 1, b: [2] },
      { b: [2], a: 1 },
    ]),
  ).toBe(false);
  expect(any([1, "1", true, "true", null, "null", [1], { 0: 1 }])).toBe(true);
  expect(ajv.compile({ type: "array", uniqueItems: false })(["a", "a"])).toBe(true);
});

test("a keyword or format the generator does not know throws, naming it", () => {
  expect(() => validValue({ type: "string", const: "x" })).toThrow(/"const"/);
  expect(() => validValue({ type: "object", properties: { a: { oneOf: [] } } })).toThrow(
    /"oneOf" at "\/a"/,
  );
  expect(() => invalidValue({ type: "string", format: "email" })).toThrow(/"email"/);
});
