/**
 * The delivery policy's flags of `endpoint add|update`, derived from the policy table
 * (domain/endpoint-policy.ts): the flag, its help with the bounds, and a parser that
 * refuses what the API's schema refuses, with the same bounds.
 */
import { InvalidArgumentError } from "commander";
import { ENDPOINT_POLICY, type PolicyField } from "../domain/endpoint-policy.ts";
import { boundedArg, durationArg, durationText, intArg } from "./args.ts";

/** A choice flag's argument: one of the field's words. */
export const wordOf = (values: readonly string[]) => (v: string) => {
  if (!values.includes(v)) throw new InvalidArgumentError(`expected one of ${values.join(", ")}`);
  return v;
};

/** The field's CLI parser: one of its words, or a number within the API's bounds. */
function parserOf(f: PolicyField): (v: string) => number | string {
  if (f.sqlType === "text") return wordOf(f.values);
  return f.cli?.value === "duration"
    ? boundedArg(durationArg, f.min, f.max, durationText)
    : boundedArg(intArg, f.min, f.max, String);
}

/** The bounds in the help: "(1..100)", "(100ms..5m)". */
export const rangeOf = (f: PolicyField) =>
  f.sqlType === "text"
    ? ""
    : f.cli?.value === "duration"
      ? ` (${durationText(f.min)}..${durationText(f.max)})`
      : ` (${f.min}..${f.max})`;

/**
 * flag, API field, parser, help: the delivery policy's flags, their values checked against
 * the same bounds as the API's schema (domain/endpoint-policy.ts)
 */
export const POLICY: ReadonlyArray<
  readonly [string, string, (v: string) => number | string, string]
> = ENDPOINT_POLICY.flatMap((f: PolicyField) =>
  f.cli ? [[f.cli.flag, f.api, parserOf(f), `${f.cli.help}${rangeOf(f)}`] as const] : [],
);

/** `atLeast` of the table (retryCapMs >= retryBaseMs), when a command gives both. */
export function checkAtLeast(body: Record<string, unknown>): void {
  for (const f of ENDPOINT_POLICY as readonly PolicyField[]) {
    if (f.sqlType !== "integer" || !f.atLeast) continue;
    const value = body[f.api];
    const floor = body[f.atLeast];
    if (typeof value === "number" && typeof floor === "number" && value < floor) {
      const flag = (api: string) =>
        ENDPOINT_POLICY.find((g) => g.api === api)?.cli?.flag.split(" ")[0] ?? api;
      throw new InvalidArgumentError(
        `${flag(f.api)} must be at least ${flag(f.atLeast)} (the server refuses ${f.api} < ${f.atLeast})`,
      );
    }
  }
}

/** camelCase of a flag: --max-in-flight -> maxInFlight (commander's option key) */
export const optionKey = (flag: string) =>
  flag
    .split(" ")[0]!
    .slice(2)
    .replace(/-(\w)/g, (_, c: string) => c.toUpperCase());
