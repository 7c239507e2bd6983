import { expect, test } from "vitest";
import { ownKey, queryStrings } from "./query.ts";

const INHERITED = [
  "constructor",
  "__proto__",
  "toString",
  "hasOwnProperty",
  "valueOf",
  "__defineGetter__",
];

test("ownKey: a table's own keys, and nothing a JS object inherits", () => {
  const table = { app: 1, url: 2 };
  expect(ownKey(table, "app")).toBe("app");
  for (const name of [...INHERITED, "prototype", "", "APP", undefined, 1, ["app"]])
    expect(ownKey(table, name)).toBeUndefined();
});

test("queryStrings: member names are plain keys on an object without a prototype", () => {
  const q = queryStrings(JSON.parse('{"sort":["constructor","x"],"__proto__":"a","toString":"b"}'));
  expect(Object.getPrototypeOf(q)).toBeNull();
  expect(q.sort).toBe("constructor");
  expect(q.constructor).toBeUndefined();
  expect(Object.getOwnPropertyDescriptor(q, "__proto__")?.value).toBe("a");
  expect(q.toString).toBe("b");
  expect(q.valueOf).toBeUndefined();
});
