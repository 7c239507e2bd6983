import { describe, expect, test } from "vitest";
import { argumentsKey, makePlanTokens } from "./plan-tokens.ts";

describe("plan tokens", () => {
  test("good once, for its tool and arguments, until it expires", () => {
    let now = 1_000;
    const tokens = makePlanTokens({ ttlMs: 60_000, now: () => now });
    const args = { endpoint: "ep_1", since: "2h" };
    const { planToken, expiresAt } = tokens.issue("requeue", args);
    expect(expiresAt).toBe(new Date(61_000).toISOString());
    expect(() => tokens.take("requeue", { ...args, since: "3h" }, planToken)).toThrow(
      /arguments differ/,
    );
    expect(() => tokens.take("replay", args, planToken)).toThrow(/arguments differ/);
    // confirm and the token itself are not part of the arguments
    tokens.take("requeue", { ...args, confirm: true, planToken }, planToken);
    expect(() => tokens.take("requeue", args, planToken)).toThrow(/unknown, used or expired/);

    const late = tokens.issue("requeue", args).planToken;
    now += 60_000;
    expect(() => tokens.take("requeue", args, late)).toThrow(
      expect.objectContaining({ code: "dry_run_required" }),
    );
    expect(() => tokens.take("requeue", args, undefined)).toThrow(/first call it without confirm/);
  });

  test("the arguments' key ignores order and unset values", () => {
    expect(argumentsKey("t", { a: 1, b: undefined, c: [2] })).toBe(
      argumentsKey("t", { c: [2], a: 1 }),
    );
    expect(argumentsKey("t", { a: 1 })).not.toBe(argumentsKey("t", { a: 2 }));
  });
});
