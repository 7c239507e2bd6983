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
