import type { FastifyInstance } from "fastify";

export interface Route {
  method: string;
  path: string;
}

/**
 * Every registered route from Fastify's route tree. printRoutes draws one node per line
 * ("│   ├── /segment (GET, HEAD)"); a node's full path is its ancestors' paths followed by
 * its own segment.
 */
export function discoverRoutes(app: FastifyInstance): Route[] {
  const out: Route[] = [];
  const stack: string[] = [];
  for (const line of app.printRoutes({ commonPrefix: false }).split("\n")) {
    const m = /^((?:[│ ] {3})*)[├└]── (.+?)(?: \(([A-Z, ]+)\))?$/.exec(line);
    if (!m) continue;
    const depth = m[1]!.length / 4;
    stack.length = depth;
    const path = (stack[depth - 1] ?? "") + m[2]!;
    stack.push(path);
    for (const method of m[3]?.split(", ") ?? []) out.push({ method, path });
  }
  return out;
}

interface OpenApiDoc {
  paths?: Record<string, Record<string, { parameters?: { in?: string; name?: string }[] }>>;
}

/**
 * The query parameters each API route declares, keyed "METHOD /path" as discoverRoutes
 * names routes, from the app's OpenAPI document (@fastify/swagger's `swagger()`; routes
 * hidden from it, the dashboard's and the portal's pages, declare none).
 */
export function routeQueryKeys(app: FastifyInstance): Map<string, string[]> {
  const doc = (app as unknown as { swagger(): OpenApiDoc }).swagger();
  const out = new Map<string, string[]>();
  for (const [path, methods] of Object.entries(doc.paths ?? {})) {
    for (const [method, op] of Object.entries(methods)) {
      const names = (op.parameters ?? []).filter((p) => p.in === "query").map((p) => p.name!);
      const route = path.replace(/\{(\w+)\}/g, ":$1");
      if (names.length > 0) out.set(`${method.toUpperCase()} ${route}`, names);
    }
  }
  return out;
}
