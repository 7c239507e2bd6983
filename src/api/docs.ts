/** The OpenAPI document, built from the routes' schemas (@fastify/swagger), and its UI at /docs. */
import swagger from "@fastify/swagger";
import swaggerUi from "@fastify/swagger-ui";
import type { FastifyInstance } from "fastify";

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
  });
  await app.register(swaggerUi, { routePrefix: "/docs" });
}
