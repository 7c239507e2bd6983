/**
 * Request bodies: JSON only (anything else is 415), and the raw text kept, since message
 * payloads are stored exactly as sent. The bytes must be UTF-8 (docs/security.md, Input):
 * decoding bad bytes as U+FFFD would store and sign a body the client never sent. Keys that
 * could pollute a receiver's prototypes are refused (secure-json-parse).
 */
import type { FastifyInstance, FastifyRequest } from "fastify";
import secureJson from "secure-json-parse";
import { apiError } from "./errors.ts";
import { utf8Problem } from "./utf8.ts";

export interface JsonBodies {
  /** whether the request's application/json body was empty (or only whitespace) */
  wasEmpty(request: FastifyRequest): boolean;
}

/** Replaces every content-type parser of `app` with the strict JSON one. */
export function registerJsonBodyParser(app: FastifyInstance): JsonBodies {
  const emptyBodies = new WeakSet<FastifyRequest>();
  app.removeAllContentTypeParsers();
  app.addContentTypeParser("application/json", { parseAs: "buffer" }, (request, body, done) => {
    const bytes = body as Buffer;
    const notUtf8 = utf8Problem(bytes, "request body");
    if (notUtf8) return done(apiError("invalid_json", notUtf8), undefined);
    const text = bytes.toString("utf8");
    request.rawBody = text;
    if (text.trim() === "") {
      // no body: a route that needs one answers empty_body (error-handler.ts)
      emptyBodies.add(request);
      return done(null, undefined);
    }
    try {
      done(
        null,
        secureJson.parse(text, undefined, { protoAction: "error", constructorAction: "error" }),
      );
    } catch (err) {
      // secure-json-parse's refusal of a valid body: say what, and why (docs/security.md)
      const message = (err as Error).message;
      const detail = /forbidden (prototype|constructor) property/.test(message)
        ? "request body has a key named __proto__, or constructor holding prototype: refused, so that no receiver's JSON parser is handed a prototype-pollution key"
        : `request body is not valid JSON: ${message}`;
      done(apiError("invalid_json", detail, { cause: err }), undefined);
    }
  });
  return { wasEmpty: (request) => emptyBodies.has(request) };
}
