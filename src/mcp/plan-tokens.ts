/**
 * The dry run before an action (docs/mcp.md): an action tool called without `confirm`
 * plans and answers a plan token; called again with `confirm: true`, the same arguments
 * and that token, it acts. A token is random, bound to its tool and its arguments, good
 * once and for `ttlMs`; anything else is refused with dry_run_required, and nothing is done.
 */
import { randomBytes } from "node:crypto";
import { HookRelayError } from "../errors.ts";

/** How long a plan stays good, in ms (default 10 minutes). */
export const PLAN_TTL_MS = 600_000;

export interface PlanTokens {
  /** a token for this tool and arguments (without `confirm` and `planToken`) */
  issue(tool: string, args: Record<string, unknown>): { planToken: string; expiresAt: string };
  /** takes the token (once); throws dry_run_required unless it fits tool and arguments */
  take(tool: string, args: Record<string, unknown>, token: string | undefined): void;
}

/** The arguments that define an action, in a stable text: keys sorted, unset ones left out. */
export function argumentsKey(tool: string, args: Record<string, unknown>): string {
  const { confirm: _c, planToken: _p, ...rest } = args;
  const defined = Object.keys(rest)
    .filter((k) => rest[k] !== undefined)
    .sort()
    .map((k) => [k, rest[k]]);
  return JSON.stringify([tool, defined]);
}

export function makePlanTokens(options: { ttlMs?: number; now?: () => number } = {}): PlanTokens {
  const ttlMs = options.ttlMs ?? PLAN_TTL_MS;
  const now = options.now ?? Date.now;
  const plans = new Map<string, { key: string; expiresAt: number }>();
  const sweep = () => {
    for (const [token, p] of plans) if (p.expiresAt <= now()) plans.delete(token);
  };
  return {
    issue(tool, args) {
      sweep();
      const planToken = `plan_${randomBytes(16).toString("base64url")}`;
      const expiresAt = now() + ttlMs;
      plans.set(planToken, { key: argumentsKey(tool, args), expiresAt });
      return { planToken, expiresAt: new Date(expiresAt).toISOString() };
    },
    take(tool, args, token) {
      sweep();
      const plan = token ? plans.get(token) : undefined;
      if (!plan)
        throw new HookRelayError(
          "dry_run_required",
          token
            ? `${tool}: the plan token is unknown, used or expired: call ${tool} without confirm for a new plan`
            : `${tool}: first call it without confirm (a dry run), then with confirm: true and the planToken it returns`,
        );
      if (plan.key !== argumentsKey(tool, args))
        throw new HookRelayError(
          "dry_run_required",
          `${tool}: the arguments differ from the dry run's: confirm with the same arguments, or call it without confirm for a new plan`,
        );
      plans.delete(token!);
    },
  };
}
