#!/usr/bin/env node
// `npm run build` (and `prepare`, so `npm ci` and `npm pack` build too): compiles src/ to
// a fresh folder with tsc, copies the SQL migrations beside the compiled migrate.js, which
// reads them from its own folder, and the dashboard's own static files (CSS, JS) beside the
// compiled assets.js, which serves them from there; marks the CLI executable (npm links
// `bin` to it as it is, so `npx hookrelay` needs the bit); then swaps the folder in for
// dist/. Building aside and swapping leaves no stale file from a removed source, and a
// process that is reading dist/ meanwhile never sees it half written or gone.
//
// A build whose inputs are those of the dist/ in place (every file under src/, the two
// tsconfig files, the build's scripts and the TypeScript version, digested into
// dist/.build-inputs by build-inputs.js) is skipped: `npm ci` builds through `prepare`, and
// `npm test` would build the same again. `--force` builds anyway.
import { spawnSync } from "node:child_process";
import {
  chmodSync,
  copyFileSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { buildInputsDigest } from "./build-inputs.js";

const root = path.resolve(import.meta.dirname, "..");
const require = createRequire(import.meta.url);
const tsc = require.resolve("typescript/bin/tsc");
const dist = path.join(root, "dist");
const fresh = path.join(root, `.dist-build-${process.pid}`);
const old = path.join(root, `.dist-old-${process.pid}`);
const STAMP = ".build-inputs";

const inputs = buildInputsDigest(root, require("typescript/package.json").version);
if (!process.argv.includes("--force") && readStamp() === inputs) {
  console.log(
    "dist/ is up to date: its sources are unchanged since it was built (--force builds anyway)",
  );
  process.exit(0);
}

rmSync(fresh, { recursive: true, force: true });
const compiled = spawnSync(
  process.execPath,
  [tsc, "-p", path.join(root, "tsconfig.build.json"), "--outDir", fresh],
  { stdio: "inherit" },
);
if (compiled.status !== 0) {
  rmSync(fresh, { recursive: true, force: true });
  process.exit(compiled.status ?? 1);
}
copyAll(path.join(root, "src/db/migrations"), path.join(fresh, "db/migrations"), /\.sql$/);
copyAll(
  path.join(root, "src/dashboard/static"),
  path.join(fresh, "dashboard/static"),
  /\.(css|js)$/,
);
chmodSync(path.join(fresh, "cli/main.js"), 0o755);
writeFileSync(path.join(fresh, STAMP), `${inputs}\n`);

try {
  renameSync(dist, old);
} catch (error) {
  if (error.code !== "ENOENT") throw error;
}
renameSync(fresh, dist);
rmSync(old, { recursive: true, force: true });

function readStamp() {
  try {
    return readFileSync(path.join(dist, STAMP), "utf8").trim();
  } catch {
    return null;
  }
}

function copyAll(from, to, pattern) {
  mkdirSync(to, { recursive: true });
  for (const file of readdirSync(from).filter((f) => pattern.test(f))) {
    copyFileSync(path.join(from, file), path.join(to, file));
  }
}
