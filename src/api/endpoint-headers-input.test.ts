import { describe, expect, test } from "vitest";
import { ApiError } from "../errors.ts";
import { patchedHeaders, replacedHeaders } from "./endpoint-headers-input.ts";

const none = () => false;
const stored = { Authorization: "Bearer real", "X-Team": "a" };

function refusal(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ApiError);
    return `${(err as ApiError).code}: ${(err as ApiError).message}`;
  }
  throw new Error("not refused");
}

describe("endpoint header changes", () => {
  test("PUT replaces; the mask of a stored sensitive header keeps its value (any case)", () => {
    expect(replacedHeaders(stored, { authorization: "***", "X-B": "b" }, none)).toEqual({
      authorization: "Bearer real",
      "X-B": "b",
    });
    expect(replacedHeaders(stored, {}, none)).toEqual({});
    // a header that is not sensitive takes "***" literally
    expect(replacedHeaders(stored, { "X-Team": "***" }, none)).toEqual({ "X-Team": "***" });
  });

  test("PATCH merges; null and deleteHeaders remove; a name in another case replaces", () => {
    expect(patchedHeaders(stored, { headers: { "x-team": "b", "X-New": "n" } }, none)).toEqual({
      Authorization: "Bearer real",
      "x-team": "b",
      "X-New": "n",
    });
    expect(patchedHeaders(stored, { headers: { AUTHORIZATION: null } }, none)).toEqual({
      "X-Team": "a",
    });
    expect(
      patchedHeaders(stored, { headers: {}, deleteHeaders: ["x-team", "nope"] }, none),
    ).toEqual({ Authorization: "Bearer real" });
  });

  test("refusals: the mask with nothing stored, a name twice, set and deleted, too many, a controlled header", () => {
    expect(refusal(() => replacedHeaders({}, { Authorization: "***" }, none))).toMatch(
      /^validation_error: .*masked value/,
    );
    expect(refusal(() => patchedHeaders(stored, { headers: { A: "1", a: "2" } }, none))).toMatch(
      /same header/,
    );
    expect(
      refusal(() => patchedHeaders(stored, { headers: { A: "1" }, deleteHeaders: ["a"] }, none)),
    ).toMatch(/both set and deleted/);
    const many = Object.fromEntries(Array.from({ length: 31 }, (_, i) => [`X-${i}`, "v"]));
    expect(refusal(() => patchedHeaders(stored, { headers: many }, none))).toMatch(/at most 32/);
    expect(refusal(() => replacedHeaders({}, { "Content-Length": "1" }, none))).toMatch(
      /Content-Length/,
    );
  });
});
