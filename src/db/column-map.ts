/**
 * Statements whose column list depends on the request (PATCH changes only the fields it
 * names), built from a column map: the columns a statement may write and the PostgreSQL
 * type of each. Column names come from the map only, never from input; every value is a
 * `$n` parameter with an explicit cast. jsonb values are sent as JSON text (node-postgres
 * would send a JavaScript array as a PostgreSQL array).
 */

export type ColumnType = "text" | "text[]" | "integer" | "boolean" | "jsonb";

/** The columns a statement may write, each with the type its parameter is cast to. */
export type ColumnMap<Row> = { readonly [K in keyof Row]-?: ColumnType };

export interface ColumnList {
  /** the column names, in the order of `values` */
  names: string[];
  /** `$n::type` per column, numbered from the first parameter given */
  placeholders: string[];
  params: unknown[];
}

/**
 * The columns of `values` that are set (undefined means "not given"; null is a value), as
 * names, placeholders and parameters numbered from `firstParam`.
 */
export function columnList<Row>(
  map: ColumnMap<Row>,
  values: Partial<Row>,
  firstParam = 1,
): ColumnList {
  const list: ColumnList = { names: [], placeholders: [], params: [] };
  for (const [name, value] of Object.entries(values)) {
    if (value === undefined) continue;
    const type = (map as Record<string, ColumnType | undefined>)[name];
    if (!type) throw new Error(`column ${name} is not in the column map`);
    list.names.push(name);
    list.placeholders.push(`$${firstParam + list.params.length}::${type}`);
    list.params.push(type === "jsonb" ? JSON.stringify(value) : value);
  }
  return list;
}

/** `name = $n::type` for each set column of `values` (an UPDATE's set list). */
export function assignments<Row>(
  map: ColumnMap<Row>,
  values: Partial<Row>,
  firstParam = 1,
): { sets: string[]; params: unknown[] } {
  const { names, placeholders, params } = columnList(map, values, firstParam);
  return { sets: names.map((n, i) => `${n} = ${placeholders[i]}`), params };
}
