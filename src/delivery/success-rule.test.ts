import { expect, test } from "vitest";
import type { AttemptResult } from "./http-sender.ts";
import { applySuccessRule, brokenBy } from "./success-rule.ts";

const ok = (body: string | null, status = 200): AttemptResult => ({
  startedAt: new Date(0),
  latencyMs: 3,
  statusCode: status,
  verdict: status < 300 ? "success" : "transient",
  errorKind: status < 300 ? null : "http",
  error: status < 300 ? null : `HTTP ${status}`,
  responseBody: body,
  retryAfterMs: null,
});

test("a body must contain one of bodyContains and none of bodyNotContains", () => {
  const rule = { bodyContains: ["success=true", "OK"], bodyNotContains: ["DUPLICATE"] };
  expect(brokenBy("OK", rule)).toBeNull();
  expect(brokenBy("status: success=true", rule)).toBeNull();
  expect(brokenBy("success=false", rule)).toBe('contains none of "success=true", "OK"');
  expect(brokenBy("OK DUPLICATE", rule)).toBe('contains "DUPLICATE"');
  expect(brokenBy("ok", { bodyContains: ["OK"] })).toBe('does not contain "OK"');
  expect(brokenBy("ok", { bodyContains: ["OK"], ignoreCase: true })).toBeNull();
  expect(brokenBy("Duplicate", { bodyNotContains: ["DUPLICATE"], ignoreCase: true })).toBe(
    'contains "DUPLICATE"',
  );
});

test("a 2xx that breaks the rule becomes a body_rule failure, retried unless the rule says permanent", () => {
  const retried = applySuccessRule(ok("success=false"), { bodyContains: ["success=true"] });
  expect(retried).toMatchObject({
    statusCode: 200,
    verdict: "transient",
    errorKind: "body_rule",
    error: 'HTTP 200, but the body does not contain "success=true"',
    responseBody: "success=false",
  });
  const permanent = applySuccessRule(ok("DUPLICATE"), {
    bodyNotContains: ["DUPLICATE"],
    onFailure: "permanent",
  });
  expect(permanent).toMatchObject({ verdict: "permanent", errorKind: "body_rule" });
  // an empty body does not contain the text
  expect(applySuccessRule(ok(null), { bodyContains: ["OK"] }).verdict).toBe("transient");
});

test("no rule, a passing body, or a status that already failed: the outcome as it was", () => {
  const good = ok("OK");
  expect(applySuccessRule(good, null)).toBe(good);
  expect(applySuccessRule(good, { bodyContains: ["OK"] })).toBe(good);
  const failed = ok("OK", 500);
  expect(applySuccessRule(failed, { bodyNotContains: ["OK"] })).toBe(failed);
});
