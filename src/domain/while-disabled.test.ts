/**
 * Every sentence that tells a person what a disabled endpoint does says the contract of
 * docs/delivery.md, "While an endpoint is disabled": the CLI's disable and enable help,
 * the mode sentences the 410 alert and the dashboard use, and the portal's notice. Each is
 * pinned word for word, so changing one is a decision made here, beside the others.
 * (test/disabled-endpoint.test.ts proves the behaviour they describe; test/alerts.test.ts
 * the alert built from them.)
 */
import { describe, expect, test } from "vitest";
import { buildProgram } from "../cli/program.ts";
import { NOTICES } from "../portal/pages/endpoints.ts";
import {
  DISABLE_HELP,
  EITHER_MODE_TEXT,
  ENABLE_HELP,
  whileDisabledOf,
  whileDisabledText,
} from "./while-disabled.ts";

describe("the disabled-endpoint sentences", () => {
  test("hold: queued and new messages wait and go out oldest first on enable", () => {
    expect(whileDisabledText("hold")).toBe(
      "what it had queued and every message sent meanwhile wait for it (held) and go out, oldest first, when it is enabled again",
    );
  });

  test("skip: new messages are recorded as skipped, not sent on enable; replay-missing sends them", () => {
    expect(whileDisabledText("skip")).toBe(
      "what it had queued waits until it is enabled again; messages sent meanwhile are recorded as skipped and are not sent on enable (replay-missing sends them)",
    );
  });

  test("the endpoint's own mode wins over the process default", () => {
    expect(whileDisabledOf("skip", "hold")).toBe("skip");
    expect(whileDisabledOf(null, "skip")).toBe("skip");
    expect(whileDisabledOf(undefined, "hold")).toBe("hold");
  });

  test("the CLI's endpoint disable and enable help say both modes", () => {
    const endpoint = buildProgram().commands.find((c) => c.name() === "endpoint")!;
    const help = (verb: string) => endpoint.commands.find((c) => c.name() === verb)!.description();
    expect(help("disable")).toBe(DISABLE_HELP);
    expect(DISABLE_HELP).toBe(
      "stop deliveries to an endpoint: queued ones wait, and messages sent meanwhile are held for it (or recorded as skipped if it has --while-disabled skip)",
    );
    expect(help("enable")).toBe(ENABLE_HELP);
    expect(ENABLE_HELP).toBe(
      "resume deliveries to an endpoint: what it held goes out, oldest first (skipped messages need replay-missing)",
    );
  });

  test("the portal's notice after a disable says both modes", () => {
    expect(NOTICES.disabled).toBe(`Endpoint disabled: ${EITHER_MODE_TEXT}.`);
    expect(EITHER_MODE_TEXT).toBe(
      "what it had queued waits until it is enabled again, and messages sent meanwhile are held for it and sent then (or recorded as skipped, if it is set to skip them)",
    );
  });
});
