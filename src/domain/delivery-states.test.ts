import { expect, test } from "vitest";
import { afterAttempt } from "./delivery-states.ts";

const policy = { maxAttempts: 3, baseMs: 1_000, capMs: 10_000 };

test("attempt outcomes move a delivery to its next state", () => {
  expect(afterAttempt("success", 1, policy, null).status).toBe("delivered");
  expect(afterAttempt("permanent", 1, policy, null).status).toBe("dead_letter");
  expect(afterAttempt("transient", 1, policy, null, () => 0.5)).toEqual({
    status: "failed",
    retryDelayMs: 1_000,
  });
  expect(afterAttempt("transient", 2, policy, 4_000)).toEqual({
    status: "failed",
    retryDelayMs: 4_000,
  });
  expect(afterAttempt("transient", 3, policy, null).status).toBe("dead_letter");
});
