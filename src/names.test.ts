import { expect, test } from "vitest";
import { isName, NAME_PATTERN } from "./names.ts";

test("isName and NAME_PATTERN agree on the rule", () => {
  const pattern = new RegExp(NAME_PATTERN);
  for (const ok of ["a", "order.paid", "A-Z_0.9", "x".repeat(256)]) {
    expect(isName(ok), ok).toBe(true);
    expect(pattern.test(ok), ok).toBe(true);
  }
  for (const bad of ["", "a b", "a/b", "ä", "a:b", "*", "a\n"]) {
    expect(isName(bad), bad).toBe(false);
    if (bad !== "") expect(pattern.test(bad), bad).toBe(false);
  }
  expect(isName("x".repeat(257))).toBe(false);
});
