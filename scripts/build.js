#!/usr/bin/env node
// `npm run build` (and `prepare`, so `npm ci` and `npm pack` build too): compiles src/ to
// dist/ with tsc, then copies the SQL migrations beside the compiled migrate.js, which reads
// them from its own folder, and the dashboard's own static files (CSS, JS) beside the
// compiled assets.js, which serves them from there.
import { spawnSync } from "node:child_process";
import { copyFileSync, mkdirSync, readdirSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";

const root = path.resolve(import.meta.dirname, "..");
const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");

rmSync(path.join(root, "dist"), { recursive: true, force: true });
const compiled = spawnSync(process.execPath, [tsc, "-p", path.join(root, "tsconfig.build.json")], {
  stdio: "inherit",
});
if (compiled.status !== 0) process.exit(compiled.status ?? 1);
const from = path.join(root, "src/db/migrations");
const to = path.join(root, "dist/db/migrations");
mkdirSync(to, { recursive: true });
for (const file of readdirSync(from).filter((f) => f.endsWith(".sql"))) {
  copyFileSync(path.join(from, file), path.join(to, file));
}

const staticFrom = path.join(root, "src/dashboard/static");
const staticTo = path.join(root, "dist/dashboard/static");
mkdirSync(staticTo, { recursive: true });
for (const file of readdirSync(staticFrom).filter((f) => /\.(css|js)$/.test(f))) {
  copyFileSync(path.join(staticFrom, file), path.join(staticTo, file));
}
