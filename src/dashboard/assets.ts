/**
 * The dashboard's static files (docs/dashboard.md, "Assets"): htmx and uPlot from their npm
 * packages (resolved at run time, so `npm ci` is the only step), and our own CSS and JS
 * from ./static (scripts/build.js copies them beside the compiled module). Each is read once
 * at start and served from memory at a URL that carries a hash of its content, so the URL
 * changes whenever the file does and browsers may keep it for a year (immutable).
 */
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import type { FastifyInstance } from "fastify";

const requireFromHere = createRequire(import.meta.url);
const staticFile = (name: string) => fileURLToPath(new URL(`./static/${name}`, import.meta.url));

/** Every asset by the name pages ask for, and the file it is read from. */
const SOURCES = {
  "htmx.js": () => requireFromHere.resolve("htmx.org/dist/htmx.min.js"),
  "uplot.js": () => requireFromHere.resolve("uplot/dist/uPlot.iife.min.js"),
  "uplot.css": () => requireFromHere.resolve("uplot/dist/uPlot.min.css"),
  "dashboard.css": () => staticFile("dashboard.css"),
  "dashboard.js": () => staticFile("dashboard.js"),
  "charts.js": () => staticFile("charts.js"),
  // the tenant portal's landing page (src/portal, docs/portal.md)
  "portal.js": () => staticFile("portal.js"),
} as const;

export type AssetName = keyof typeof SOURCES;

const TYPES: Record<string, string> = {
  js: "text/javascript; charset=utf-8",
  css: "text/css; charset=utf-8",
};

interface Asset {
  body: Buffer;
  hash: string;
  type: string;
}

/** One year: the URL changes with the content, so a cached copy is never stale. */
const IMMUTABLE = "public, max-age=31536000, immutable";

let loaded: Map<string, Asset> | null = null;

function load(): Map<string, Asset> {
  loaded ??= new Map(
    Object.entries(SOURCES).map(([name, source]) => {
      const body = readFileSync(source());
      const hash = createHash("sha256").update(body).digest("hex").slice(0, 12);
      return [name, { body, hash, type: TYPES[name.split(".").pop()!]! }];
    }),
  );
  return loaded;
}

/** The versioned URL of an asset, e.g. /dashboard/assets/3f9a0c1d2e4b/htmx.js. */
export function assetUrl(name: AssetName): string {
  return `/dashboard/assets/${load().get(name)!.hash}/${name}`;
}

/** Serves GET /dashboard/assets/{hash}/{name}; a stale or unknown hash is a 404. */
export function registerAssetRoutes(app: FastifyInstance): void {
  const assets = load();
  app.get<{ Params: { hash: string; name: string } }>(
    "/dashboard/assets/:hash/:name",
    { schema: { hide: true } },
    async (request, reply) => {
      const asset = assets.get(request.params.name);
      if (!asset || asset.hash !== request.params.hash) {
        return reply.code(404).type("text/plain; charset=utf-8").send("no such asset");
      }
      return reply
        .header("cache-control", IMMUTABLE)
        .header("x-content-type-options", "nosniff")
        .type(asset.type)
        .send(asset.body);
    },
  );
}
