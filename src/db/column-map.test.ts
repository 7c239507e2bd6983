import { describe, expect, test } from "vitest";
import { assignments, type ColumnMap, columnList } from "./column-map.ts";

interface Row {
  url: string;
  tags: string[] | null;
  limit: number | null;
  on: boolean;
  meta: Record<string, string>;
}
const MAP: ColumnMap<Row> = {
  url: "text",
  tags: "text[]",
  limit: "integer",
  on: "boolean",
  meta: "jsonb",
};

describe("columnList", () => {
  test("every set column, cast, numbered from the first parameter", () => {
    expect(columnList(MAP, { url: "https://x", limit: 5, on: false }, 3)).toEqual({
      names: ["url", "limit", "on"],
      placeholders: ["$3::text", "$4::integer", "$5::boolean"],
      params: ["https://x", 5, false],
    });
  });

  test("undefined is left out; null is a value", () => {
    expect(columnList(MAP, { url: undefined, tags: null, limit: null })).toEqual({
      names: ["tags", "limit"],
      placeholders: ["$1::text[]", "$2::integer"],
      params: [null, null],
    });
  });

  test("jsonb values are sent as JSON text; arrays stay arrays for text[]", () => {
    const list = columnList(MAP, { tags: ["a", "b"], meta: { k: "v" } });
    expect(list.params).toEqual([["a", "b"], '{"k":"v"}']);
    expect(list.placeholders).toEqual(["$1::text[]", "$2::jsonb"]);
  });

  test("a column outside the map is refused (names come from the map only)", () => {
    const values = { url: "x", "url = 'y'; --": 1 } as Partial<Row>;
    expect(() => columnList(MAP, values)).toThrow(/not in the column map/);
  });

  test("nothing set: empty lists", () => {
    expect(columnList(MAP, {})).toEqual({ names: [], placeholders: [], params: [] });
  });
});

describe("assignments", () => {
  test("a set list for an UPDATE whose $1 is the row's id", () => {
    expect(assignments(MAP, { on: true, meta: {}, url: "u" }, 2)).toEqual({
      sets: ["on = $2::boolean", "meta = $3::jsonb", "url = $4::text"],
      params: [true, "{}", "u"],
    });
  });
});
