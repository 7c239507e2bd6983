import { describe, expect, test } from "vitest";
import { DatabaseError } from "../errors.ts";
import { isClientAbort, isDatabaseUnavailable } from "./unavailable.ts";

const withCode = (code: string, message = "x") => Object.assign(new Error(message), { code });

describe("isDatabaseUnavailable", () => {
  test.each([
    ["a refused connection", withCode("ECONNREFUSED")],
    ["a reset connection", withCode("ECONNRESET")],
    ["a shutdown ending the session", withCode("57P01", "terminating connection")],
    ["a server starting up", withCode("57P03", "the database system is starting up")],
    ["a connection exception", withCode("08006")],
    ["a standby after failover", withCode("25006")],
    ["a connection cut by the server", new Error("Connection terminated unexpectedly")],
    ["a pool that could not connect in time", new Error("timeout exceeded when trying to connect")],
    ["every address refused", new AggregateError([withCode("ECONNREFUSED")], "connect failed")],
    ["a wrapped cause", new DatabaseError("start failed", { cause: withCode("ECONNREFUSED") })],
  ])("%s is unavailability", (_what, err) => {
    expect(isDatabaseUnavailable(err)).toBe(true);
  });

  test.each([
    ["a unique violation", withCode("23505")],
    ["a syntax error", withCode("42601")],
    ["a canceled statement", withCode("57014")],
    ["a plain error", new Error("boom")],
    ["nothing", undefined],
    ["a string", "ECONNREFUSED"],
    ["an API client that hung up mid-body (Node's http server)", withCode("ECONNRESET", "aborted")],
  ])("%s is not", (_what, err) => {
    expect(isDatabaseUnavailable(err)).toBe(false);
  });
});

describe("isClientAbort", () => {
  test("Node's aborted request only, not a database socket reset", () => {
    expect(isClientAbort(withCode("ECONNRESET", "aborted"))).toBe(true);
    const dbReset = Object.assign(withCode("ECONNRESET", "read ECONNRESET"), { syscall: "read" });
    expect(isClientAbort(dbReset)).toBe(false);
    expect(isDatabaseUnavailable(dbReset)).toBe(true);
    expect(
      isClientAbort(Object.assign(withCode("ECONNRESET", "aborted"), { syscall: "read" })),
    ).toBe(false);
    expect(isClientAbort(new Error("aborted"))).toBe(false);
  });
});
