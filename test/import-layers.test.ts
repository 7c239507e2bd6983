/**
 * Imports run downhill only (docs/architecture.md, Layers): the layer table there, read
 * from the document itself, is the order; a module imports only from its own layer and the
 * layers listed before it, and from the top-level leaves named above the table. The domain
 * floor imports nothing but itself (and `config.ts`'s types): no database, no Node I/O.
 * What some rows say besides is checked too: the receiver kit stands alone, the CLI loads
 * the server roles only dynamically, the UIs never import `api/server.ts`.
 * Tests (`*.test.ts`) are not checked: they reach across layers on purpose. Only static
 * imports count; a dynamic `import()` is how the CLI loads the server roles.
 */
import { readdir, readFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, test } from "vitest";
import {
  type ImportEdge,
  importsOf,
  type Layers,
  readLayers,
  uphillImports,
} from "./helpers/import-layers.ts";

const repo = path.resolve(path.dirname(new URL(import.meta.url).pathname), "..");

async function sources(dir: string, base = dir): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) out.push(...(await sources(full, base)));
    else if (entry.name.endsWith(".ts") && !entry.name.endsWith(".test.ts"))
      out.push(path.relative(base, full).split(path.sep).join("/"));
  }
  return out;
}

describe("import layers (docs/architecture.md)", () => {
  test("the document names the layers, bottom up, and the leaves", async () => {
    const layers = readLayers(await readFile(path.join(repo, "docs/architecture.md"), "utf8"));
    expect(layers.order.slice(0, 3)).toEqual(["domain", "lib", "db"]);
    expect(layers.order).toContain("runtime.ts");
    expect([...layers.leaves]).toEqual(expect.arrayContaining(["errors.ts", "config.ts"]));
  });

  test("no module under src/ imports uphill", async () => {
    const layers = readLayers(await readFile(path.join(repo, "docs/architecture.md"), "utf8"));
    const src = path.join(repo, "src");
    const edges: ImportEdge[] = [];
    for (const file of await sources(src)) {
      edges.push(...importsOf(file, await readFile(path.join(src, file), "utf8")));
    }
    expect(edges.length).toBeGreaterThan(500);
    expect(uphillImports(layers, edges)).toEqual([]);
  });

  test("the check reports an uphill import, an impure domain module, an unlisted folder and a broken row rule", () => {
    const layers: Layers = {
      order: ["domain", "db", "queue"],
      leaves: new Set(["errors.ts", "config.ts"]),
      leafImports: new Set(["db/pool.ts"]),
    };
    const edges = [
      ...importsOf("db/queries/work.ts", 'import { WORK_CHANNEL } from "../../queue/work.ts";'),
      ...importsOf("queue/claim.ts", 'import { x } from "../db/sql/states.ts";'),
      ...importsOf("queue/claim.ts", 'import { ConfigError } from "../errors.ts";'),
      ...importsOf("domain/states.ts", 'import type { Pool } from "../db/pool.ts";'),
      ...importsOf("domain/states.ts", 'import { readFile } from "node:fs/promises";'),
      ...importsOf("domain/policy.ts", 'import type { HealthConfig } from "../config.ts";'),
      ...importsOf("domain/policy.ts", 'export { afterAttempt } from "./states.ts";'),
      ...importsOf("config.ts", 'import { redact } from "./security/redact.ts";'),
      ...importsOf("config.ts", 'import type { Pool } from "./db/pool.ts";'),
      ...importsOf("portal/page.ts", 'import "../db/pool.ts";'),
      ...importsOf("receiver/verify.ts", 'import { ConfigError } from "../errors.ts";'),
      ...importsOf("receiver/verify.ts", 'import { sign } from "../delivery/sign.ts";'),
      ...importsOf("receiver/pg.ts", 'import pg from "pg";'),
      ...importsOf("receiver/fastify.ts", 'import type { FastifyPluginAsync } from "fastify";'),
      ...importsOf("cli/serve.ts", 'import type { Roles } from "../runtime.ts";'),
      ...importsOf("cli/serve.ts", 'import { startRuntime } from "../runtime.ts";'),
    ];
    expect(uphillImports(layers, edges)).toEqual([
      "db/queries/work.ts imports queue/work.ts: queue is above db",
      "domain/states.ts imports db/pool.ts: the domain imports only itself",
      "domain/states.ts imports node:fs/promises: the domain imports only itself",
      "config.ts imports security/redact.ts: a top-level leaf imports only what the doc names",
      "portal/page.ts: portal is not in the layer table",
      "receiver/verify.ts imports delivery/sign.ts: the receiver kit imports only itself and errors.ts",
      "receiver/verify.ts: receiver is not in the layer table",
      "receiver/pg.ts imports pg: the receiver kit takes only Node's built-ins at run time",
      "cli/serve.ts: cli is not in the layer table",
      "cli/serve.ts imports runtime.ts: the CLI loads the server roles only by dynamic import",
    ]);
  });
});
