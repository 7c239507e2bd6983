/**
 * The Ajv instances behind the API's schema validation: bodies are checked strictly (no type
 * coercion, no silent stripping of unknown fields, so a typo is an error, not a field quietly
 * ignored); query strings and params coerce "5" to 5.
 *
 * `uniqueItems` is replaced by our own check. Ajv's (8.x) indexes string items in a plain
 * object, and `indices["__proto__"]` is the object's prototype, never a number, so
 * `["__proto__", "__proto__"]` passed as unique (found by the schema fuzz,
 * test/schema-arbitrary.test.ts). Ours keys a Map by a canonical form of each item.
 */
import { Ajv, type FuncKeywordDefinition } from "ajv";
import addFormats from "ajv-formats";

export interface ValidatorOptions {
  /** Report every error rather than stop at the first (the API stops at the first). */
  allErrors?: boolean;
}

/** The Ajv that checks request bodies. */
export function bodyAjv(options: ValidatorOptions = {}): Ajv {
  return build(false, options);
}

/** The Ajv that checks query strings and path params. */
export function paramsAjv(options: ValidatorOptions = {}): Ajv {
  return build("array", options);
}

function build(coerceTypes: false | "array", options: ValidatorOptions): Ajv {
  const ajv = addFormats.default(
    new Ajv({
      removeAdditional: false,
      coerceTypes,
      allErrors: options.allErrors ?? false,
      useDefaults: true,
    }),
  );
  ajv.removeKeyword("uniqueItems");
  ajv.addKeyword({
    keyword: "uniqueItems",
    type: "array",
    schemaType: "boolean",
    errors: true,
    compile: (wanted: boolean) => {
      const check: ReturnType<NonNullable<FuncKeywordDefinition["compile"]>> = (
        data: unknown[],
      ) => {
        check.errors = undefined;
        const pair = wanted ? firstDuplicate(data) : undefined;
        if (!pair) return true;
        const [i, j] = pair;
        check.errors = [
          {
            keyword: "uniqueItems",
            params: { i, j },
            message: `must NOT have duplicate items (items ## ${j} and ${i} are identical)`,
          },
        ];
        return false;
      };
      return check;
    },
  });
  return ajv;
}

/** The indexes of the first two equal items (`i` the later one), or undefined. */
export function firstDuplicate(items: readonly unknown[]): [number, number] | undefined {
  const seen = new Map<string, number>();
  for (let i = 0; i < items.length; i++) {
    const key = canonical(items[i]);
    const j = seen.get(key);
    if (j !== undefined) return [i, j];
    seen.set(key, i);
  }
  return undefined;
}

/** JSON with object keys sorted: equal for values JSON Schema calls equal. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) =>
      a < b ? -1 : a > b ? 1 : 0,
    );
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(",")}}`;
  }
  return JSON.stringify(value);
}
