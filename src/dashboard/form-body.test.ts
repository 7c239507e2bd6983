import { describe, expect, test } from "vitest";
import { field, fields } from "./form-body.ts";

describe("form fields", () => {
  test("a field's first string value, trimmed; absent is empty", () => {
    expect(field({ a: " x " }, "a")).toBe("x");
    expect(field({ a: ["y", "z"] }, "a")).toBe("y");
    expect(field({}, "a")).toBe("");
    expect(fields({ a: ["y", "z"] }, "a")).toEqual(["y", "z"]);
    expect(fields({ a: "y" }, "a")).toEqual(["y"]);
  });

  // regression: a JSON body posted to a form route (hostile-junk's route walk) held an object
  // where a policy field's string was read, and .trim() on it answered 500
  test("values that are not strings (a JSON body sent to a form route) count as absent", () => {
    const body = { timeoutMs: { a: 1 }, eventTypes: [null, 2, "t"], disabled: true, n: 5 };
    expect(field(body, "timeoutMs")).toBe("");
    expect(field(body, "disabled")).toBe("");
    expect(field(body, "n")).toBe("");
    expect(field(body, "eventTypes")).toBe("");
    expect(fields(body, "eventTypes")).toEqual(["t"]);
    expect(fields(body, "timeoutMs")).toEqual([]);
    expect(field(null, "a")).toBe("");
  });
});
