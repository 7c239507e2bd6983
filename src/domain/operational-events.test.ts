import { expect, test } from "vitest";
import { attemptEvent, FAILING_ATTEMPT, OperationalEvent } from "./operational-events.ts";

const result = (over: Partial<Parameters<typeof attemptEvent>[0]>) => ({
  attemptNumber: 1,
  nextStatus: "failed",
  success: false,
  failureNotified: false,
  ...over,
});

test("failing is raised by the fourth failed attempt that will be retried, and no other", () => {
  expect(attemptEvent(result({ attemptNumber: FAILING_ATTEMPT }))).toBe(
    OperationalEvent.attemptFailing,
  );
  for (const n of [1, 2, 3, 5, 6]) expect(attemptEvent(result({ attemptNumber: n }))).toBeNull();
});

test("exhausted is raised by any attempt that makes a dead letter", () => {
  for (const n of [1, FAILING_ATTEMPT, 9])
    expect(attemptEvent(result({ attemptNumber: n, nextStatus: "dead_letter" }))).toBe(
      OperationalEvent.attemptExhausted,
    );
});

test("recovered is raised by a success only after a failing or exhausted event", () => {
  const ok = { success: true, nextStatus: "delivered" };
  expect(attemptEvent(result({ ...ok, failureNotified: true }))).toBe(
    OperationalEvent.attemptRecovered,
  );
  expect(attemptEvent(result({ ...ok, failureNotified: false }))).toBeNull();
});
