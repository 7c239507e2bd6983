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

/** The API's validator compiler (Fastify's setValidatorCompiler), with Ajv instances of its own. */
export function makeValidatorCompiler(): FastifySchemaCompiler<unknown> {
  // made on the first schema not compiled before
  const ajv: { strict?: Ajv; coercing?: Ajv } = {};
  const compile = (kind: "strict" | "coercing", schema: object): Validator => {
    const key = schemaKey(schema);
    let validate = key === undefined ? undefined : compiled[kind].get(key);
    if (!validate) {
      if (!ajv[kind]) ajv[kind] = kind === "strict" ? bodyAjv() : paramsAjv();
      validate = ajv[kind].compile(schema);
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
