/**
 * The validator compiler reuses what it compiled for an equal schema (a process that builds
 * the API again compiles nothing again), per kind, and the validators still check as before;
 * a schema is compiled on its validator's first use, or by compilePending().
 */
import { describe, expect, test } from "vitest";
import { compilePending, makeValidatorCompiler } from "./validator-compiler.ts";

const schema = () => ({
  type: "object",
  properties: { n: { type: "integer", minimum: 1 } },
  required: ["n"],
  additionalProperties: false,
});

type Part = "body" | "querystring";
const compile = (c: ReturnType<typeof makeValidatorCompiler>, s: object, httpPart: Part) =>
  c({ schema: s, httpPart, method: "POST", url: "/x" }) as ((d: unknown) => boolean) & {
    errors?: unknown;
  };

describe("the validator compiler", () => {
  test("an equal schema in another API build gets the body validator compiled before", () => {
    const first = compile(makeValidatorCompiler(), schema(), "body");
    const again = compile(makeValidatorCompiler(), schema(), "body");
    expect(again).toBe(first);
    // bodies are not coerced: "5" is not an integer
    expect(again({ n: 5 })).toBe(true);
    expect(again({ n: "5" })).toBe(false);
    expect(again({ n: 5, extra: 1 })).toBe(false);
  });

  test("a body and a query string with the same schema are compiled apart (coercion differs)", () => {
    const c = makeValidatorCompiler();
    const body = compile(c, schema(), "body");
    const query = compile(c, schema(), "querystring");
    expect(query({ n: "5" })).toBe(true);
    expect(body({ n: "5" })).toBe(false);
    // the query validator still refuses a coerced number that is not finite
    expect(query({ n: "1e999" })).toBe(false);
    expect(query.errors).toEqual([expect.objectContaining({ instancePath: "/n" })]);
  });

  test("a different schema is not mistaken for a compiled one", () => {
    const c = makeValidatorCompiler();
    const one = compile(c, schema(), "body");
    const other = compile(c, { ...schema(), required: [] }, "body");
    expect(other).not.toBe(one);
    expect(other({})).toBe(true);
    expect(one({})).toBe(false);
  });

  test("a schema holding something JSON does not (a RegExp) is compiled every time", () => {
    const odd = () => ({ ...schema(), examples: [/x/] });
    const first = compile(makeValidatorCompiler(), odd(), "body");
    expect(compile(makeValidatorCompiler(), odd(), "body")).not.toBe(first);
  });

  test("a schema is compiled on its validator's first use, or by compilePending()", () => {
    compilePending();
    const c = makeValidatorCompiler();
    const good = compile(c, { ...schema(), description: "first use" }, "querystring");
    expect(compilePending()).toBe(1);
    expect(compilePending()).toBe(0);
    expect(good({ n: "2" })).toBe(true);
    // Ajv refuses this schema ("minimum" must be a number): making its validator does not,
    // its first use and compilePending() do
    const refused = { type: "object", properties: { n: { type: "integer", minimum: "x" } } };
    const bad = compile(c, refused, "body");
    expect(() => bad({ n: 1 })).toThrow(/minimum/);
    expect(() => compilePending()).toThrow(/minimum/);
  });
});
