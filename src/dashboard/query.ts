/** Query-string values as the dashboard reads them: one string per name, or undefined. */
export function queryStrings(query: unknown): Record<string, string | undefined> {
  const out: Record<string, string | undefined> = {};
  if (typeof query !== "object" || query === null) return out;
  for (const [k, v] of Object.entries(query)) {
    const first = Array.isArray(v) ? v[0] : v;
    out[k] = typeof first === "string" ? first : undefined;
  }
  return out;
}
