/**
 * hookrelay's Node flags live on the first line of bin/hookrelay.js (what `hookrelay` and
 * `npx hookrelay` run); `npm start` must pass the same ones, and the bench reads them from
 * there so that it measures hookrelay as users run it.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { expect, test } from "vitest";
import { HOOKRELAY_NODE_FLAGS } from "../bench/lib/procs.ts";

const ROOT = path.resolve(import.meta.dirname, "..");

test("the hookrelay command, npm start and the bench run Node with the same flags", () => {
  const shebang = readFileSync(path.join(ROOT, "bin/hookrelay.js"), "utf8").split("\n", 1)[0]!;
  expect(shebang).toMatch(/^#!\/usr\/bin\/env -S node( --\S+)+$/);
  expect(HOOKRELAY_NODE_FLAGS).toContain("--max-semi-space-size=32");

  const start: string = JSON.parse(readFileSync(path.join(ROOT, "package.json"), "utf8")).scripts.start;
  expect(start).toBe(`node ${HOOKRELAY_NODE_FLAGS.join(" ")} bin/hookrelay.js start`);
});
