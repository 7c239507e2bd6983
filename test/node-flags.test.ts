/**
 * hookrelay's Node flags are given once, in `npm start`; README's deployment commands set
 * the same ones through NODE_OPTIONS, and the bench reads them from `npm start` so that it
 * measures hookrelay as users are told to run it.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { expect, test } from "vitest";
import { HOOKRELAY_NODE_FLAGS } from "../bench/lib/procs.ts";

const ROOT = path.resolve(import.meta.dirname, "..");

test("npm start, README's deployment commands and the bench run Node with the same flags", () => {
  const start: string = JSON.parse(readFileSync(path.join(ROOT, "package.json"), "utf8")).scripts
    .start;
  expect(start).toBe(`node ${HOOKRELAY_NODE_FLAGS.join(" ")} dist/cli/main.js start`);
  expect(HOOKRELAY_NODE_FLAGS).toContain("--max-semi-space-size=32");

  const readme = readFileSync(path.join(ROOT, "README.md"), "utf8");
  expect(readme).toContain(`export NODE_OPTIONS="${HOOKRELAY_NODE_FLAGS.join(" ")}"`);
});
