/**
 * The import-layer check of test/import-layers.test.ts (docs/architecture.md, Layers): reads
 * the layer table, lists a module's static imports and reports those that run uphill.
 */
import path from "node:path";

export interface Layers {
  /** the table's first column, bottom up: a folder (`db`) or a top-level module (`runtime.ts`) */
  order: string[];
  /** top-level modules any layer may import (`errors.ts`, `config.ts`, ...) */
  leaves: Set<string>;
  /** what the leaves themselves import besides each other (`security/redact.ts`, ...) */
  leafImports: Set<string>;
}

/** Reads the layer table and the paragraph above it from docs/architecture.md. */
export function readLayers(doc: string): Layers {
  const start = doc.indexOf("## Layers");
  const end = doc.indexOf("\n## ", start + 1);
  const section = doc.slice(start, end === -1 ? undefined : end);
  const tableAt = section.indexOf("\n|");
  const preamble = section.slice(0, tableAt);
  const order = [...section.slice(tableAt).matchAll(/^\| `src\/([^`]+)` \|/gm)].map((m) => m[1]!);
  const named = [...preamble.matchAll(/`([^`]+)`/g)].map((m) => m[1]!.replace(/'s$/, ""));
  return {
    order,
    leaves: new Set(named.filter((n) => /^[a-z-]+\.ts$/.test(n))),
    leafImports: new Set(named.filter((n) => /^[a-z-]+\/[a-z-]+\.ts$/.test(n))),
  };
}

export interface ImportEdge {
  /** the importing module, relative to src/ */
  from: string;
  /** the imported module, relative to src/ (or the package name) */
  to: string;
  typeOnly: boolean;
}

/** The static imports and re-exports of one module's text. */
export function importsOf(from: string, text: string): ImportEdge[] {
  const out: ImportEdge[] = [];
  const pattern = /^(?:import|export)\s+(type\s+)?(?:[^;"]*?\sfrom\s+)?"([^"]+)"/gm;
  for (const m of text.matchAll(pattern)) {
    const spec = m[2]!;
    const to = spec.startsWith(".")
      ? path.posix.normalize(path.posix.join(path.posix.dirname(from), spec))
      : spec;
    out.push({ from, to, typeOnly: m[1] !== undefined });
  }
  return out;
}

const layerOf = (module: string) => module.split("/")[0]!;

/**
 * What some rows of the table say beyond the order: the receiver kit stands alone, the CLI
 * loads the server roles only dynamically, the UIs never import the API's composition.
 */
function rowRule(e: ImportEdge, external: boolean): string | null {
  const from = layerOf(e.from);
  if (from === "receiver") {
    if (external && !e.to.startsWith("node:") && !e.typeOnly)
      return "the receiver kit takes only Node's built-ins at run time";
    if (!external && layerOf(e.to) !== "receiver" && e.to !== "errors.ts")
      return "the receiver kit imports only itself and errors.ts";
  }
  const roles = ["runtime.ts", "db/migrate.ts", "server.ts", "http-app.ts"];
  if (from === "cli" && roles.includes(e.to) && !e.typeOnly)
    return "the CLI loads the server roles only by dynamic import";
  if ((from === "dashboard" || from === "portal") && e.to === "api/server.ts")
    return "the UIs never import api/server.ts";
  return null;
}

/** Every import that breaks the layer rules, as readable lines. */
export function uphillImports(layers: Layers, edges: readonly ImportEdge[]): string[] {
  const offenders: string[] = [];
  for (const e of edges) {
    const from = layerOf(e.from);
    const external = !e.to.includes(".ts") && !e.to.startsWith("..");
    if (from === "domain") {
      const allowed = layerOf(e.to) === "domain" || (e.to === "config.ts" && e.typeOnly);
      if (!allowed) offenders.push(`${e.from} imports ${e.to}: the domain imports only itself`);
      continue;
    }
    const rule = rowRule(e, external);
    if (rule) offenders.push(`${e.from} imports ${e.to}: ${rule}`);
    if (external) continue;
    const to = layerOf(e.to);
    if (to === from) continue;
    if (layers.leaves.has(from)) {
      if (!layers.leaves.has(to) && !layers.leafImports.has(e.to))
        offenders.push(
          `${e.from} imports ${e.to}: a top-level leaf imports only what the doc names`,
        );
      continue;
    }
    if (layers.leaves.has(to)) continue;
    const a = layers.order.indexOf(from);
    const b = layers.order.indexOf(to);
    if (a === -1) offenders.push(`${e.from}: ${from} is not in the layer table`);
    else if (b === -1) offenders.push(`${e.from} imports ${e.to}: ${to} is not in the layer table`);
    else if (b > a) offenders.push(`${e.from} imports ${e.to}: ${to} is above ${from}`);
  }
  return [...new Set(offenders)];
}
