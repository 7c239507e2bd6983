/**
 * Success rules on the response body (README.md, Postbacks): some trackers answer 200 to a
 * postback they refused, with the refusal in the body (`success=false`, `DUPLICATE`). An
 * endpoint may say what a 2xx body must contain (one of `bodyContains`) and must not
 * contain (none of `bodyNotContains`), and whether a body that breaks the rule is retried
 * like a transient failure or dead-lettered at once.
 *
 * The rule is literal text, not a regular expression: it runs in the worker on bodies a
 * stranger writes, and a backtracking pattern could stall every delivery of the process.
 * It looks at the response body as read (at most 64 KiB).
 */
import type { SuccessRuleRow } from "../db/queries/endpoints.ts";
import { ErrorKind, Verdict } from "../domain/retry-policy.ts";
import type { AttemptResult } from "./http-sender.ts";

/**
 * bodyContains: a 2xx body must contain at least one of these; bodyNotContains: ... and
 * none of these; ignoreCase: compare without regard to letter case (default false);
 * onFailure: a body that breaks the rule is retried with backoff ("retry", the default) or
 * a dead letter at once ("permanent").
 */
export type SuccessRule = SuccessRuleRow;

/** The outcome with the rule applied: a 2xx whose body breaks it becomes a failure of kind `body_rule`. */
export function applySuccessRule(outcome: AttemptResult, rule: SuccessRule | null): AttemptResult {
  if (rule === null || outcome.verdict !== Verdict.success) return outcome;
  const broken = brokenBy(outcome.responseBody ?? "", rule);
  if (broken === null) return outcome;
  return {
    ...outcome,
    verdict: rule.onFailure === "permanent" ? Verdict.permanent : Verdict.transient,
    errorKind: ErrorKind.bodyRule,
    error: `HTTP ${outcome.statusCode}, but the body ${broken}`,
  };
}

/** What about `body` breaks the rule, or null when it passes. */
export function brokenBy(body: string, rule: SuccessRule): string | null {
  const fold = (s: string) => (rule.ignoreCase ? s.toLowerCase() : s);
  const text = fold(body);
  const must = rule.bodyContains ?? [];
  if (must.length > 0 && !must.some((m) => text.includes(fold(m)))) {
    return must.length === 1
      ? `does not contain ${JSON.stringify(must[0])}`
      : `contains none of ${must.map((m) => JSON.stringify(m)).join(", ")}`;
  }
  const hit = (rule.bodyNotContains ?? []).find((m) => text.includes(fold(m)));
  return hit === undefined ? null : `contains ${JSON.stringify(hit)}`;
}
