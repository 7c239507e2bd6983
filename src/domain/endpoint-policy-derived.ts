/**
 * What is derived from the endpoint-policy table (domain/endpoint-policy.ts): the API's
 * JSON schema properties and answer, the columns a body writes and a PUT resets, the
 * column map and select list, and the effective value in SQL and in TypeScript. Each
 * handles both kinds of field: an integer (bounds) and a choice (an enum of words).
 */
import {
  type AliasName,
  type DefaultedName,
  ENDPOINT_POLICY,
  fieldOf,
  nullMeaning,
  type PolicyColumn,
  type PolicyColumns,
  type PolicyDefaults,
  type PolicyField,
  type PolicyIn,
  type PolicyName,
  type PolicyOut,
  type PolicyValue,
} from "./endpoint-policy.ts";

/** A policy field's JSON schema: a nullable integer within bounds, or one of its words. */
export type PolicySchema =
  | { type: ["integer", "null"]; minimum: number; maximum: number; description: string }
  | { type: ["string", "null"]; enum: (string | null)[]; description: string };

/** A field's JSON schema, with its description. */
function schemaOf(f: PolicyField, description: string): PolicySchema {
  return f.sqlType === "integer"
    ? { type: ["integer", "null"], minimum: f.min, maximum: f.max, description }
    : { type: ["string", "null"], enum: [...f.values, null], description };
}

/** The JSON schema properties of the policy fields (an alias has its field's bounds). */
export function policySchemaProperties(): Record<PolicyName | AliasName, PolicySchema> {
  const props: Record<string, PolicySchema> = {};
  for (const f of ENDPOINT_POLICY as readonly PolicyField[]) {
    props[f.api] = schemaOf(f, `${f.description} Null: ${nullMeaning(f)}.`);
    if (f.alias)
      props[f.alias] = schemaOf(f, `The same as ${f.api} (read when ${f.api} is absent).`);
  }
  return props as ReturnType<typeof policySchemaProperties>;
}

/** The columns a body's policy fields write (left out: not written). */
export function policyColumnsOf(body: PolicyIn): Partial<PolicyColumns> {
  const values = body as Record<string, PolicyValue | undefined>;
  const cols: Record<string, PolicyValue> = {};
  for (const f of ENDPOINT_POLICY as readonly PolicyField[]) {
    const v = values[f.api] !== undefined ? values[f.api] : f.alias ? values[f.alias] : undefined;
    if (v !== undefined) cols[f.column] = v;
  }
  return cols;
}

/** The refusal of columns that break an `atLeast` rule, or null. */
export function policyConflict(cols: Partial<PolicyColumns>): string | null {
  const values = cols as Record<string, PolicyValue | undefined>;
  for (const f of ENDPOINT_POLICY as readonly PolicyField[]) {
    if (f.sqlType !== "integer" || !f.atLeast) continue;
    const floor = fieldOf(f.atLeast as PolicyName);
    const v = values[f.column];
    const min = values[floor.column];
    if (typeof v === "number" && typeof min === "number" && v < min)
      return `${f.api} must be >= ${floor.api}`;
  }
  return null;
}

/** The columns a PUT that leaves their fields out resets to null. */
export function policyPutDefaults(): Partial<PolicyColumns> {
  const cols: Record<string, null> = {};
  for (const f of ENDPOINT_POLICY as readonly PolicyField[])
    if (f.put === "reset") cols[f.column] = null;
  return cols;
}

/** Each policy column with its SQL type (a column map, db/column-map.ts). */
export const POLICY_COLUMN_TYPES = Object.fromEntries(
  ENDPOINT_POLICY.map((f) => [f.column, f.sqlType]),
) as Record<PolicyColumn, PolicyField["sqlType"]>;

/** The policy columns as a select list ("throttle_rate, timeout_ms, ..."). */
export const POLICY_SELECT_LIST = ENDPOINT_POLICY.map((f) => f.column).join(", ");

/** The API's policy fields of a row (an alias answers its field's value). */
export function policyOut(row: PolicyColumns): PolicyOut {
  const out: Record<string, PolicyValue> = {};
  for (const f of ENDPOINT_POLICY as readonly PolicyField[]) {
    const v: PolicyValue = row[f.column as PolicyColumn];
    out[f.api] = v;
    if (f.alias) out[f.alias] = v;
  }
  return out as PolicyOut;
}

/**
 * The SQL expression of a field's effective value for the endpoints row `alias`: its
 * column, else its fallback column, else the process default bound as the named parameter
 * `param` (by default `$default<Name>`, e.g. `$defaultMaxInFlight`). A field without a
 * default (a rate limit) stays null when unset: no limit.
 */
export function effectiveSql(alias: string, name: PolicyName, param?: string): string {
  const f = fieldOf(name);
  const parts = [`${alias}.${f.column}`];
  if (f.fallback) parts.push(`${alias}.${f.fallback}`);
  if (f.default)
    parts.push(`${param ?? `$default${name[0]!.toUpperCase()}${name.slice(1)}`}::${f.sqlType}`);
  return parts.length === 1 ? parts[0]! : `coalesce(${parts.join(", ")})`;
}

/** A field's effective value: the endpoint's own (by API name), else the process default. */
export function effective<N extends DefaultedName>(
  endpoint: { readonly [K in N]?: PolicyDefaults[K] | null },
  defaults: Pick<PolicyDefaults, N>,
  name: N,
): PolicyDefaults[N] {
  return endpoint[name] ?? defaults[name];
}
