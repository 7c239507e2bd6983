import { describe, expect, test } from "vitest";
import { checkSecret, REPLACE_DEFAULTS, toColumns } from "./endpoint-input.ts";

const codeOf = (fn: () => unknown) => {
  try {
    fn();
  } catch (err) {
    return (err as { code?: string }).code;
  }
  return "no error";
};

describe("toColumns", () => {
  test("only the fields given become columns; Svix's older names are aliases", () => {
    expect(toColumns({ filterTypes: ["a"], rateLimit: 5 })).toEqual({
      event_types: ["a"],
      throttle_rate: 5,
    });
    // the newer name wins over the older one
    expect(toColumns({ eventTypes: ["b"], filterTypes: ["a"] })).toEqual({ event_types: ["b"] });
    expect(toColumns({})).toEqual({});
  });

  test("an empty filter list means every event type / channel (null)", () => {
    expect(toColumns({ eventTypes: [], channels: [] })).toEqual({
      event_types: null,
      channels: null,
    });
  });

  test("disabling records the operator as the reason; enabling clears it", () => {
    expect(toColumns({ disabled: true })).toEqual({ disabled: true, disabled_reason: "operator" });
    expect(toColumns({ disabled: false })).toEqual({ disabled: false, disabled_reason: null });
  });

  test("a PUT's defaults are overridden by the fields it gives", () => {
    const fields = {
      ...REPLACE_DEFAULTS,
      ...toColumns({ url: "https://x.example/", timeoutMs: 500 }),
    };
    expect(fields).toMatchObject({ url: "https://x.example/", timeout_ms: 500, description: "" });
  });

  test("what JSON schema cannot check", () => {
    expect(codeOf(() => toColumns({ url: "not a url" }))).toBe("validation_error");
    expect(codeOf(() => toColumns({ url: "ftp://x.example/" }))).toBe("validation_error");
    expect(codeOf(() => toColumns({ url: "https://u:p@x.example/" }))).toBe("validation_error");
    expect(codeOf(() => toColumns({ headers: { "Webhook-Id": "x" } }))).toBe("validation_error");
    expect(codeOf(() => toColumns({ retryBaseMs: 10, retryCapMs: 5 }))).toBe("bad_request");
    expect(codeOf(() => toColumns({ retryBaseMs: 10, retryCapMs: 10 }))).toBe("no error");
  });
});

describe("checkSecret", () => {
  test("adds the whsec_ prefix when missing; refuses what is not base64 of 24-64 bytes", () => {
    const b64 = Buffer.alloc(32, 7).toString("base64");
    expect(checkSecret(b64)).toBe(`whsec_${b64}`);
    expect(checkSecret(`whsec_${b64}`)).toBe(`whsec_${b64}`);
    expect(codeOf(() => checkSecret("whsec_short"))).toBe("validation_error");
  });
});
