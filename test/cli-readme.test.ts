/**
 * README's CLI examples are commands the CLI has: every `npx hookrelay ...` line of the
 * ```sh blocks names an existing command, options it has (with their values) and as many
 * arguments as it takes, checked against the command tree without running anything.
 */
import { readFileSync } from "node:fs";
import type { Command } from "commander";
import { describe, expect, test } from "vitest";
import { buildProgram } from "../src/cli/program.ts";

const README = readFileSync(new URL("../README.md", import.meta.url), "utf8");

/** Shell words of one line: quotes kept together, a trailing `# comment` dropped. */
function words(line: string): string[] {
  const out: string[] = [];
  for (const m of line.matchAll(/'[^']*'|"[^"]*"|#.*$|\S+/g)) {
    if (m[0].startsWith("#")) break;
    out.push(m[0]);
  }
  return out;
}

/** Every `npx hookrelay` command line of README's sh blocks, continuations joined. */
function readmeCommands(): string[][] {
  const lines: string[][] = [];
  for (const block of README.matchAll(/^```sh\n([\s\S]*?)^```$/gm)) {
    const joined = block[1]!.replace(/\\\n\s*/g, " ");
    for (const line of joined.split("\n")) {
      const at = line.indexOf("npx hookrelay ");
      if (at >= 0) lines.push(words(line.slice(at + "npx hookrelay ".length)));
    }
  }
  return lines;
}

/** What is wrong with `hookrelay <args>`, or null when the command tree takes it. */
function problemOf(program: Command, args: string[]): string | null {
  let cmd = program;
  let i = 0;
  for (; i < args.length; i++) {
    const sub = cmd.commands.find((c) => c.name() === args[i]);
    if (!sub) break;
    cmd = sub;
  }
  if (cmd === program) return `no command ${args[0]}`;
  if (cmd.commands.length > 0) return `${cmd.name()} needs a subcommand`;
  // a command that passes everything on (`bench [options...]`) takes any words
  if (cmd.registeredArguments.at(-1)?.variadic) return null;
  let positional = 0;
  for (; i < args.length; i++) {
    const word = args[i]!;
    if (!word.startsWith("--")) {
      positional++;
      continue;
    }
    const option = cmd.options.find((o) => o.long === word.split("=")[0]);
    if (!option) return `${cmd.name()} has no option ${word}`;
    if (option.required && !word.includes("=")) i++;
  }
  const takes = cmd.registeredArguments;
  const required = takes.filter((a) => a.required).length;
  if (positional < required || positional > takes.length)
    return `${cmd.name()} takes ${required}..${takes.length} arguments, given ${positional}`;
  return null;
}

describe("README's CLI examples", () => {
  const program = buildProgram();
  const lines = readmeCommands();

  test("the README has CLI examples, replays and tasks among them", () => {
    expect(lines.length).toBeGreaterThan(20);
    const named = lines.map((l) => l.slice(0, 2).join(" "));
    for (const c of ["endpoint recover", "endpoint replay-missing", "endpoint bulk-replay"])
      expect(named).toContain(c);
    expect(named).toContain("tasks list");
  });

  test("each is a command the CLI has, with its options and arguments", () => {
    const problems: string[] = [];
    for (const args of lines) {
      // `endpoint disable|enable|rotate-secret ...`: each of them
      const variants = (args[1] ?? "").includes("|")
        ? args[1]!.split("|").map((v) => [args[0]!, v, ...args.slice(2)])
        : [args];
      for (const v of variants) {
        const problem = problemOf(program, v);
        if (problem) problems.push(`npx hookrelay ${v.join(" ")}: ${problem}`);
      }
    }
    expect(problems).toEqual([]);
  });

  test("the check refuses what the CLI would (it can fail)", () => {
    expect(problemOf(program, ["tasks", "list", "--bogus"])).toMatch(/no option --bogus/);
    expect(problemOf(program, ["endpoint", "recover", "acme"])).toMatch(/takes 2\.\.2/);
    expect(problemOf(program, ["nothing"])).toMatch(/no command/);
  });
});
