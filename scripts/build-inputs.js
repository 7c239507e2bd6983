// What `npm run build` (scripts/build.js) reads, digested: the build is skipped when the
// digest is the one recorded in the dist/ in place.
import { createHash } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";

/** A digest of everything the build reads: names and contents, in a fixed order. */
export function buildInputsDigest(root, typescriptVersion) {
  const hash = createHash("sha256");
  const add = (file) => {
    hash.update(path.relative(root, file));
    hash.update("\0");
    hash.update(readFileSync(file));
    hash.update("\0");
  };
  for (const file of filesUnder(path.join(root, "src"))) add(file);
  for (const name of [
    "tsconfig.json",
    "tsconfig.build.json",
    "scripts/build.js",
    "scripts/build-inputs.js",
  ]) {
    add(path.join(root, name));
  }
  hash.update(typescriptVersion);
  return hash.digest("hex");
}

function filesUnder(dir) {
  return readdirSync(dir, { withFileTypes: true })
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    .flatMap((entry) => {
      const full = path.join(dir, entry.name);
      return entry.isDirectory() ? filesUnder(full) : [full];
    });
}
