/**
 * Query-string values as the dashboard and the portal read them, and the one way a value
 * from a request picks an entry of a constant table (docs/security.md, "Input").
 */

/** One string per name, or undefined; the object has no prototype, so no name reaches one. */
export function queryStrings(query: unknown): Record<string, string | undefined> {
  const out: Record<string, string | undefined> = Object.create(null);
  if (typeof query !== "object" || query === null) return out;
  for (const [k, v] of Object.entries(query)) {
    const first = Array.isArray(v) ? v[0] : v;
    out[k] = typeof first === "string" ? first : undefined;
  }
  return out;
}

/**
 * `value` if it is one of `table`'s own keys, else undefined: `constructor`, `__proto__`,
 * `toString` and every other member a JS object inherits are plain unknown values, never
 * the inherited member (`value in table` and `table[value]` find those).
 */
export function ownKey<T extends object>(table: T, value: unknown): (keyof T & string) | undefined {
  return typeof value === "string" && Object.hasOwn(table, value)
    ? (value as keyof T & string)
    : undefined;
}
