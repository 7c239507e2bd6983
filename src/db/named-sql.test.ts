import { describe, expect, test } from "vitest";
import { namedSql } from "./named-sql.ts";

describe("namedSql", () => {
  test("names become $1..$n in order of first use; a repeated name is one parameter", () => {
    const q = namedSql<{ limit: number; token: string; worker: string }>(
      "select $token::uuid, $worker::text, $limit::int, $token::uuid",
    );
    expect(q.text).toBe("select $1::uuid, $2::text, $3::int, $1::uuid");
    expect(q.names).toEqual(["token", "worker", "limit"]);
    // the object's own key order does not matter
    expect(q.values({ limit: 5, worker: "w", token: "t" })).toEqual(["t", "w", 5]);
  });

  test("query() gives a node-postgres config, prepared under its name when it has one", () => {
    expect(namedSql<{ a: number }>("select $a::int", "stmt").query({ a: 1 })).toEqual({
      name: "stmt",
      text: "select $1::int",
      values: [1],
    });
    expect(namedSql<{ a: number }>("select $a::int").query({ a: 1 })).toEqual({
      text: "select $1::int",
      values: [1],
    });
  });

  test("a fragment from elsewhere composes by name, not by offset", () => {
    const fragment = "x >= $threshold::int and y < $cap::int";
    const q = namedSql<{ id: string; threshold: number; cap: number }>(
      `select * from t where id = $id::text and ${fragment} and z <> $threshold::int`,
    );
    expect(q.text).toBe(
      "select * from t where id = $1::text and x >= $2::int and y < $3::int and z <> $2::int",
    );
    expect(q.values({ cap: 9, threshold: 3, id: "a" })).toEqual(["a", 3, 9]);
  });

  test("null is a value; a missing one, or one no name reads, throws", () => {
    const q = namedSql<{ a: number | null; b?: string }>("select $a::int, $b::text");
    expect(q.values({ a: null, b: "x" })).toEqual([null, "x"]);
    expect(() => q.values({ a: 1 })).toThrow("SQL parameter b has no value");
    expect(() => q.values({ a: 1, b: "x", c: 2 } as never)).toThrow(
      "SQL parameter c is not used by the statement",
    );
  });

  test("quoted strings, quoted identifiers and comments are left alone", () => {
    const q = namedSql<{ a: number }>(
      `select '$notParam', 'it''s $no', "$col", $a::int -- $comment
       /* $block */ , '${"$"}also'`,
    );
    expect(q.names).toEqual(["a"]);
    expect(q.text).toContain("'$notParam'");
    expect(q.text).toContain('"$col"');
    expect(q.text).toContain("-- $comment");
    expect(q.text).toContain("/* $block */");
    expect(q.text).toContain("$1::int");
  });

  test("positional parameters and dollar quoting are refused", () => {
    expect(() => namedSql("select $1::int")).toThrow("only named parameters");
    expect(() => namedSql("select $$x$$")).toThrow("only named parameters");
    expect(() => namedSql("select $tag$x$tag$")).toThrow("dollar-quoted");
  });

  test("casts right after a name end the name", () => {
    expect(namedSql<{ ids: string[] }>("select unnest($ids::bigint[])").text).toBe(
      "select unnest($1::bigint[])",
    );
  });
});
