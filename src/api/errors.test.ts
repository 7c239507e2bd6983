import { readFileSync } from "node:fs";
import { describe, expect, test } from "vitest";
import { ApiError, ERROR_CODES } from "../errors.ts";
import {
  API_ERRORS,
  apiError,
  badRequest,
  conflict,
  forbidden,
  isNotFound,
  notFound,
  validationError,
} from "./errors.ts";

describe("the API error registry", () => {
  test("every code is snake_case with a 4xx or 5xx status", () => {
    for (const [code, status] of Object.entries(API_ERRORS)) {
      expect(code).toMatch(/^[a-z]+(_[a-z]+)*$/);
      expect(status >= 400 && status < 600, code).toBe(true);
    }
  });

  test("apiError answers with the code's one status and { code, detail }", () => {
    for (const code of Object.keys(API_ERRORS) as Array<keyof typeof API_ERRORS>) {
      const err = apiError(code, "why");
      expect(err).toBeInstanceOf(ApiError);
      expect(err.status).toBe(API_ERRORS[code]);
      expect(err.toJSON()).toEqual({ code, detail: "why" });
    }
  });

  test("the shorthands use the registry", () => {
    expect([badRequest("x").status, badRequest("x").code]).toEqual([400, "bad_request"]);
    expect([validationError("x").status, validationError("x").code]).toEqual([
      422,
      "validation_error",
    ]);
    expect(notFound("endpoint").toJSON()).toEqual({
      code: "not_found",
      detail: "endpoint not found",
    });
    expect(forbidden("x").status).toBe(403);
    const cause = new Error("duplicate key");
    expect(conflict("taken", { cause })).toMatchObject({ status: 409, code: "conflict", cause });
  });

  test("headers and cause are kept", () => {
    const err = apiError("rate_limited", "slow down", { headers: { "retry-after": "2" } });
    expect(err.headers).toEqual({ "retry-after": "2" });
  });

  test("isNotFound is true for notFound() only", () => {
    expect(isNotFound(notFound("application"))).toBe(true);
    expect(isNotFound(badRequest("x"))).toBe(false);
    expect(isNotFound(new Error("not_found"))).toBe(false);
  });

  test("docs/errors.md lists exactly the registry, with the same statuses", () => {
    const doc = readFileSync(new URL("../../docs/errors.md", import.meta.url), "utf8");
    const rows = [...doc.matchAll(/^\| `([a-z_]+)` \| (\d{3}) \|/gm)].map((m) => [
      m[1],
      Number(m[2]),
    ]);
    expect(rows).toEqual(Object.entries(API_ERRORS));
  });

  test("docs/errors.md lists every in-process code of the one registry, and no other", () => {
    const doc = readFileSync(new URL("../../docs/errors.md", import.meta.url), "utf8");
    const section = doc.slice(doc.indexOf("## Codes thrown in-process"));
    const rows = [...section.matchAll(/^\| `([a-z_]+)` \|/gm)].map((m) => m[1]);
    const inProcess = Object.keys(ERROR_CODES).filter((code) => !Object.hasOwn(API_ERRORS, code));
    expect(rows).toEqual(inProcess);
    for (const code of Object.keys(ERROR_CODES)) expect(code).toMatch(/^[a-z]+(_[a-z]+)*$/);
  });
});
