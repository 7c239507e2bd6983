/**
 * How route schemas become validators: bodies strictly, query strings and params coerced
 * (src/api/validators.ts), and a coerced number that is not finite refused.
 */
import type { FastifySchemaCompiler } from "fastify";
import { bodyAjv, paramsAjv } from "./validators.ts";

type Ajv = ReturnType<typeof bodyAjv>;
type Validator = ReturnType<Ajv["compile"]>;

/**
 * Validators already compiled, by kind and schema text. A process that builds the API more
 * than once (the tests build one or more per file) compiles each schema once: the same
 * JSON schema, compiled by Ajv instances of the same options, gives the same validator.
 * (Route schemas are plain JSON; one holding anything else, a function or a RegExp, is
 * compiled every time.) A few hundred schemas at most: the routes'.
 */
const compiled = {
  strict: new Map<string, Validator>(),
  coercing: new Map<string, Validator>(),
};

/** The schema as text, or undefined when it holds something JSON does not (then no reuse). */
function schemaKey(schema: object): string | undefined {
  let plain = true;
  const text = JSON.stringify(schema, (_key, value: unknown) => {
    if (
      value === undefined ||
      typeof value === "function" ||
      typeof value === "bigint" ||
      typeof value === "symbol" ||
      (typeof value === "object" &&
        value !== null &&
        !Array.isArray(value) &&
        Object.getPrototypeOf(value) !== Object.prototype &&
        Object.getPrototypeOf(value) !== null)
    )
      plain = false;
    return value;
  });
  return plain ? text : undefined;
}

/** Validators made and not compiled yet: what compilePending() compiles. */
const pending = new Set<() => Validator>();

/**
 * A validator that compiles its schema when it first validates. Fastify asks for every
 * route's validators as the API is built, and Ajv's compiling them all was most of the
 * CPU of building the API (docs/performance.md, "What a process start costs"); an API
 * process, or a test that builds one, now compiles the schemas of the routes it serves.
 */
function compiledOnFirstUse(compileNow: () => Validator): Validator {
  let validate: Validator | undefined;
  const ensure = (): Validator => {
    if (!validate) {
      validate = compileNow();
      pending.delete(ensure);
    }
    return validate;
  };
  pending.add(ensure);
  const lazy = ((data: unknown) => {
    const v = ensure();
    const ok = v(data);
    lazy.errors = v.errors;
    return ok;
  }) as Validator;
  return lazy;
}

/**
 * Compiles every validator made and not compiled yet; answers how many (throws Ajv's error
 * for a schema it refuses). test/api-schemas-compile.test.ts builds the API and calls it:
 * a route schema Ajv refuses fails there, not at a route's first request.
 */
export function compilePending(): number {
  const now = [...pending];
  for (const ensure of now) ensure();
  return now.length;
}

/** The API's validator compiler (Fastify's setValidatorCompiler), with Ajv instances of its own. */
export function makeValidatorCompiler(): FastifySchemaCompiler<unknown> {
  // made on the first schema compiled
  const ajv: { strict?: Ajv; coercing?: Ajv } = {};
  const compile = (kind: "strict" | "coercing", schema: object): Validator => {
    const key = schemaKey(schema);
    let validate = key === undefined ? undefined : compiled[kind].get(key);
    if (!validate) {
      // compiled as it is now: a plain schema from its text, whatever befalls the object
      const source = key === undefined ? schema : (JSON.parse(key) as object);
      validate = compiledOnFirstUse(() => {
        if (!ajv[kind]) ajv[kind] = kind === "strict" ? bodyAjv() : paramsAjv();
        return ajv[kind].compile(source);
      });
      if (key !== undefined) compiled[kind].set(key, validate);
    }
    return validate;
  };
  return ({ schema, httpPart }) => {
    if (httpPart === "body") return compile("strict", schema as object);
    const validate = compile("coercing", schema as object);
    // Coercion turns "1e999" into Infinity, which then skips minimum/maximum: refuse it.
    const checked: ((data: unknown) => boolean) & { errors?: unknown } = (
      data: unknown,
    ): boolean => {
      checked.errors = null;
      if (!validate(data)) {
        checked.errors = validate.errors;
        return false;
      }
      for (const [k, v] of Object.entries((data ?? {}) as Record<string, unknown>)) {
        if (typeof v === "number" && !Number.isFinite(v)) {
          checked.errors = [
            {
              instancePath: `/${k}`,
              schemaPath: "",
              keyword: "type",
              params: {},
              message: "must be a finite number",
            },
          ];
          return false;
        }
      }
      return true;
    };
    return checked as Validator;
  };
}
