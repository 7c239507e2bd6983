/**
 * The module hooks of loaded-packages.mjs (they run on Node's loader thread): each module
 * resolved from a package's folder appends the package's name to the file it was given.
 */
import { appendFileSync } from "node:fs";

/** The package a module's path or URL belongs to (the innermost node_modules), or null. */
export function packageOf(location) {
  const at = location.lastIndexOf("/node_modules/");
  if (at === -1) return null;
  const [scope, name] = location.slice(at + "/node_modules/".length).split("/");
  return scope?.startsWith("@") ? `${scope}/${name}` : (scope ?? null);
}

let file = "";

export function initialize(data) {
  file = data.file;
}

export async function resolve(specifier, context, nextResolve) {
  const resolved = await nextResolve(specifier, context);
  const name = packageOf(resolved.url);
  if (name) appendFileSync(file, `${name}\n`);
  return resolved;
}
