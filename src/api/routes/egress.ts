/**
 * GET /api/v1/egress: the server's egress pools (docs/egress.md) and the public IPs the
 * operator declared for each, so a tenant can copy them into a receiver's allowlist. Any
 * key may read it (app-scoped ones too: the portal shows it); it names no proxy and no
 * local address, only what receivers see.
 */
import type { FastifyInstance } from "fastify";
import type { ApiContext } from "../context.ts";

const pool = {
  type: "object",
  additionalProperties: false,
  properties: {
    name: { type: "string" },
    description: { type: "string" },
    publicIps: { type: "array", items: { type: "string" } },
  },
  required: ["name", "description", "publicIps"],
} as const;

export const egressListResponse = {
  type: "object",
  additionalProperties: false,
  properties: {
    data: { type: "array", items: pool },
    /** requests of endpoints without a pool: through HOOKRELAY_EGRESS_PROXY, or directly */
    defaultRoute: { type: "string", enum: ["proxy", "direct"] },
  },
  required: ["data", "defaultRoute"],
} as const;

export interface EgressPoolOut {
  name: string;
  description: string;
  publicIps: string[];
}

export function registerEgressRoutes(app: FastifyInstance, { config }: ApiContext): void {
  const data: EgressPoolOut[] = Object.entries(config.egress.pools)
    .map(([name, p]) => ({ name, description: p.description, publicIps: p.publicIps }))
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const body = { data, defaultRoute: config.egress.proxy === null ? "direct" : "proxy" } as const;
  app.get(
    "/egress",
    {
      schema: {
        tags: ["egress"],
        summary: "Egress pools and the public IPs receivers see",
        description:
          "The named egress pools an endpoint or application may select (egressPool), each with the public IPs the operator declared for it, to copy into a receiver's allowlist; defaultRoute says how endpoints without a pool leave.",
        response: { 200: egressListResponse },
      },
    },
    async () => body,
  );
}
