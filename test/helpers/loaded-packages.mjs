/**
 * Preloaded into a hookrelay process by a test (`NODE_OPTIONS=--import=<this file's URL>`):
 * records which packages the process loads, one name a line, in the file named by
 * LOADED_PACKAGES_FILE. Every module imported through Node's ESM loader is noted as it
 * resolves (loaded-packages-hooks.mjs: all of hookrelay's own imports, static or dynamic),
 * and the CommonJS module cache's packages (those required by other packages) at exit.
 */
import { appendFileSync } from "node:fs";
import { createRequire, register } from "node:module";
import { packageOf } from "./loaded-packages-hooks.mjs";

const file = process.env.LOADED_PACKAGES_FILE;
if (!file) throw new Error("LOADED_PACKAGES_FILE is not set");
register("./loaded-packages-hooks.mjs", import.meta.url, { data: { file } });

const cache = createRequire(import.meta.url).cache;
process.on("exit", () => {
  const names = new Set(Object.keys(cache).map(packageOf).filter(Boolean));
  appendFileSync(file, [...names].map((n) => `${n}\n`).join(""));
});
