/**
 * README.md ("Dead-letter patterns") lists the same patterns as the code, in the same
 * order, each with the same "when" and the same advice word for word: the table an
 * operator reads is the one the analysis applies.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { expect, test } from "vitest";
import { MIXED, PATTERNS } from "./dead-letter-patterns.ts";

function readmeRows(): { pattern: string; when: string; suggestedAction: string }[] {
  const readme = readFileSync(path.join(import.meta.dirname, "../../README.md"), "utf8");
  const start = readme.indexOf("\n### Dead-letter patterns\n");
  expect(start, "README.md has a Dead-letter patterns section").toBeGreaterThan(0);
  const section = readme.slice(start + 1, readme.indexOf("\n#", start + 1));
  return [...section.matchAll(/^\| `([a-z_]+)` \| (.+?) \| (.+?) \|$/gm)].map((m) => ({
    pattern: m[1]!,
    when: m[2]!,
    suggestedAction: m[3]!,
  }));
}

test("README's table of dead-letter patterns is the code's, row for row", () => {
  const code = [...PATTERNS, MIXED].map(({ pattern, when, suggestedAction }) => ({
    pattern,
    when,
    suggestedAction,
  }));
  expect(readmeRows()).toEqual(code);
});
