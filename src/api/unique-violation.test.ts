import { describe, expect, test } from "vitest";
import { ApiError } from "../errors.ts";
import { conflictOnUnique, isUniqueViolation } from "./unique-violation.ts";

/** The shape node-postgres gives a server error: an Error with the SQLSTATE as `code`. */
const pgError = (code: string) =>
  Object.assign(new Error(`duplicate key value (${code})`), { code, constraint: "x_uid_key" });

describe("isUniqueViolation", () => {
  test("SQLSTATE 23505 only", () => {
    expect(isUniqueViolation(pgError("23505"))).toBe(true);
    for (const other of [pgError("23503"), pgError("23514"), pgError("40001")])
      expect(isUniqueViolation(other)).toBe(false);
  });

  test("anything that is not an error object is not one", () => {
    for (const v of [null, undefined, "23505", 23505, { code: 23505 }, new Error("23505")])
      expect(isUniqueViolation(v)).toBe(false);
  });
});

describe("conflictOnUnique", () => {
  const handler = conflictOnUnique("an application with this uid already exists");

  test("a unique violation becomes a 409 conflict that keeps the database error as its cause", () => {
    const cause = pgError("23505");
    let thrown: unknown;
    try {
      handler(cause);
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(ApiError);
    expect((thrown as ApiError).status).toBe(409);
    expect((thrown as ApiError).toJSON()).toEqual({
      code: "conflict",
      detail: "an application with this uid already exists",
    });
    expect((thrown as ApiError).cause).toBe(cause);
  });

  test("any other error is thrown on unchanged", () => {
    const other = pgError("23503");
    expect(() => handler(other)).toThrow(other);
    const plain = new Error("connection terminated");
    expect(() => handler(plain)).toThrow(plain);
  });

  test("as a .catch() handler, a resolved value passes through", async () => {
    await expect(Promise.resolve(7).catch(handler)).resolves.toBe(7);
    await expect(Promise.reject(pgError("23505")).catch(handler)).rejects.toMatchObject({
      status: 409,
    });
  });
});
