import { describe, expect, test } from "vitest";
import { rawMember } from "./json-member.ts";

describe("rawMember", () => {
  test("returns the exact source text of a top-level member", () => {
    const body =
      '{ "eventType" : "a", "payload" :{"b":1, "2":"x","big":12345678901234567890, "s":"}\\"{"} ,"z":[1]}';
    expect(rawMember(body, "payload")).toBe(
      '{"b":1, "2":"x","big":12345678901234567890, "s":"}\\"{"}',
    );
    expect(rawMember(body, "z")).toBe("[1]");
    expect(rawMember(body, "eventType")).toBe('"a"');
    expect(rawMember(body, "missing")).toBeUndefined();
  });

  test("ignores nested members of the same name and takes the last duplicate, like JSON.parse", () => {
    expect(rawMember('{"a":{"payload":1},"payload":2}', "payload")).toBe("2");
    expect(rawMember('{"payload":1,"payload":{"x":true}}', "payload")).toBe('{"x":true}');
    expect(rawMember('{"pay\\u006coad":[]}', "payload")).toBe("[]");
  });

  test("handles scalars, whitespace and non-objects", () => {
    expect(rawMember('{"payload":null}', "payload")).toBe("null");
    expect(rawMember('{"payload":-1.5e3\n}', "payload")).toBe("-1.5e3");
    expect(rawMember("[1,2]", "payload")).toBeUndefined();
    expect(rawMember("{}", "payload")).toBeUndefined();
  });

  test("agrees with JSON.parse on generated objects", () => {
    for (let i = 0; i < 200; i++) {
      const value = { n: i, s: `"q${i}\\`, a: [i, { k: "}" }], u: "é\u2028" };
      const text = JSON.stringify({ before: i, payload: value, after: [i] }, null, i % 3);
      expect(JSON.parse(rawMember(text, "payload")!)).toEqual(value);
    }
  });
});
