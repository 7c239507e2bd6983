/**
 * The disabled-endpoint contract in words (docs/delivery.md, "While an endpoint is
 * disabled"), written once for every place that tells a person: the CLI's disable/enable
 * help, the 410 Gone alert, the dashboard's and the portal's endpoint pages.
 *
 * The contract: a message that arrives while an endpoint is disabled (by hand, by a 410
 * Gone, by an operator) always gets a delivery row for it. With whileDisabled "hold" (the
 * default) the row is pending and waits: the claim passes disabled endpoints by, and
 * enabling sends everything held, oldest first. With "skip" the row is written canceled,
 * last_error_kind "endpoint_disabled", shown as "skipped (endpoint disabled)"; enabling
 * does not send it, replay-missing does. Either way, deliveries queued before the endpoint
 * was disabled stay queued and go out when it is enabled; nothing is dead-lettered or
 * dropped by disabling.
 */
import type { WhileDisabled } from "../config.ts";

/** The effective mode: the endpoint's own, else the process default. */
export const whileDisabledOf = (
  own: WhileDisabled | null | undefined,
  processDefault: WhileDisabled,
): WhileDisabled => own ?? processDefault;

/** What a disabled endpoint does, as the end of a sentence ("...; <this>."). */
export function whileDisabledText(mode: WhileDisabled): string {
  return mode === "skip"
    ? "what it had queued waits until it is enabled again; messages sent meanwhile are recorded as skipped and are not sent on enable (replay-missing sends them)"
    : "what it had queued and every message sent meanwhile wait for it (held) and go out, oldest first, when it is enabled again";
}

/** The same, where the reader's mode is not known (the portal's notice after a disable). */
export const EITHER_MODE_TEXT =
  "what it had queued waits until it is enabled again, and messages sent meanwhile are held for it and sent then (or recorded as skipped, if it is set to skip them)";

/** The CLI's `endpoint disable` help: both modes, since the command does not know which. */
export const DISABLE_HELP =
  "stop deliveries to an endpoint: queued ones wait, and messages sent meanwhile are held for it (or recorded as skipped if it has --while-disabled skip)";

/** The CLI's `endpoint enable` help. */
export const ENABLE_HELP =
  "resume deliveries to an endpoint: what it held goes out, oldest first (skipped messages need replay-missing)";
