/**
 * The OpenAPI document, built from the routes' schemas (@fastify/swagger), and its UI at
 * /docs. What a route's schema does not say of itself (a summary, a description, the shape
 * of its answer) comes from operation-docs.ts; test/openapi.test.ts validates the document
 * and fails on an operation without them.
 */
import swagger from "@fastify/swagger";
import swaggerUi from "@fastify/swagger-ui";
import type { FastifyInstance, FastifySchema } from "fastify";
import { OPERATION_DOCS, openApiPath } from "./operation-docs.ts";

/** The route's schema with operation-docs.ts's summary, description and answers filled in. */
function documented(schema: FastifySchema | undefined, method: string, url: string) {
  const doc = OPERATION_DOCS[`${method} ${openApiPath(url)}`];
  const own = (schema ?? {}) as FastifySchema & {
    summary?: string;
    description?: string;
    response?: Record<string, unknown>;
  };
  if (doc === undefined) return own;
  return {
    ...own,
    summary: own.summary ?? doc.summary,
    description: own.description ?? doc.description,
    response: own.response ?? doc.response,
  };
}

/**
 * JSON Schema keywords OpenAPI 3.0's schema objects do not have. The routes keep them (their
 * validator enforces them); the document leaves them out so that it validates.
 */
const NOT_IN_OPENAPI_30 = new Set(["propertyNames"]);

function withoutUnsupported(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutUnsupported);
  if (value === null || typeof value !== "object") return value;
  return Object.fromEntries(
    Object.entries(value)
      .filter(([key]) => !NOT_IN_OPENAPI_30.has(key))
      .map(([key, v]) => [key, withoutUnsupported(v)]),
  );
}

/** Registers the docs; before any route, so that every route is in the document. */
export async function registerDocs(app: FastifyInstance): Promise<void> {
  await app.register(swagger, {
    openapi: {
      info: {
        title: "hookrelay",
        version: "0.1.0",
        description: "Webhook and postback delivery, Svix-compatible API",
      },
      components: { securitySchemes: { bearer: { type: "http", scheme: "bearer" } } },
      security: [{ bearer: [] }],
    },
    transform: ({ schema, url, route }) => {
      const method = (Array.isArray(route.method) ? route.method[0] : route.method) ?? "GET";
      return {
        schema: documented(schema, String(method).toUpperCase(), url) as FastifySchema,
        url,
      };
    },
    transformObject: (document) => {
      const built = "openapiObject" in document ? document.openapiObject : document.swaggerObject;
      return withoutUnsupported(built) as typeof built;
    },
  });
  await app.register(swaggerUi, { routePrefix: "/docs" });
}
