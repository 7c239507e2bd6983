/**
 * How route schemas become validators: bodies strictly, query strings and params coerced
 * (src/api/validators.ts), and a coerced number that is not finite refused.
 */
import type { FastifySchemaCompiler } from "fastify";
import { bodyAjv, paramsAjv } from "./validators.ts";

/** The API's validator compiler (Fastify's setValidatorCompiler), with Ajv instances of its own. */
export function makeValidatorCompiler(): FastifySchemaCompiler<unknown> {
  const strict = bodyAjv();
  const coercing = paramsAjv();
  return ({ schema, httpPart }) => {
    if (httpPart === "body") return strict.compile(schema as object);
    const validate = coercing.compile(schema as object);
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
    return checked as ReturnType<typeof coercing.compile>;
  };
}
